"""Fan-out of the vllm_env image in the lab: bytes out of the controller and wall time against N.

For N = 1, 2, 4, 8 target hosts: the targets lose their vllm_env image, `build_images` brings it from the build
host (which already holds it: the build is done once, before the first N), and we print the image bytes that
went through the controller and, measured independently, every byte this machine sent into the lab's network
(the lab bridge's tx_bytes: SSH packets, commands, docker API calls, everything), each against the image size;
the bytes each host received and from whom; the wall time, and its ratio to N = 1's; then the same run again,
which must move 0 bytes. Goal: that 0, and host to host the image bytes through the controller under 0.05 x the
image whatever N; ends with each goal met or MISSED, exits 1 when one missed.

    python bench/image_fanout.py                      # host to host (image/relay.py), fan-out 2
    python bench/image_fanout.py --through-controller # the fallback path alone: save -> controller -> load
    python bench/image_fanout.py --bare-targets       # the targets hold no layer of it: the whole image travels

Lab hosts img-build + img-t1..img-t8 (full: sshd + their own dockerd, as a receiver needs its own engine; a light
host has none), created if missing: about 2 minutes to start 9 full hosts, 2-4 minutes for the runs on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402

from tritonops.image.api import build_images  # noqa: E402
from tritonops.inventory import load_inventory  # noqa: E402
from tritonops.lab import api as lab_api  # noqa: E402
from tritonops.lab.image_specs import TRITON_TAG  # noqa: E402
from tritonops.lab.request import HostSpec, LabRequest  # noqa: E402
from tritonops.lab.wheelhouse import LAB_VLLM_VERSION, serve_on_host  # noqa: E402
from tritonops.transport.pool import open_transport  # noqa: E402

from goals import Goal, verdict  # noqa: E402  (bench/ is the script's folder)

GOAL_OUT_OVER_SIZE = 0.05   # host to host: image bytes through the controller against the image, whatever N


def goals(rows: list[tuple], host_to_host: bool) -> list[Goal]:
    """Per N (rows: N, image size, image bytes out, ..., no-op bytes at [8]): the same run again moves 0 bytes; host
    to host, the image bytes through the controller stay under 0.05 x the image (through the controller they are
    N images by design)."""
    found = []
    for row in rows:
        n, size, out, noop = row[0], row[1], row[2], row[8]
        if host_to_host:
            found.append(Goal(f"N={n}: image bytes through the controller / image size",
                              round(out / size, 4) if size else None, GOAL_OUT_OVER_SIZE))
        found.append(Goal(f"N={n}: bytes moved by the same run again", noop, 0))
    return found

BUILDER = "img-build"
TARGETS = tuple(f"img-t{i}" for i in range(1, 9))
PROFILES = ("4090", "2080ti", "t4", "4090", "3090", "t4", "t4", "t4", "t4")
INDEX_PORT = 18431


def into_lab_network(prefix: str) -> Callable[[], int]:
    """A counter of the bytes this machine has sent into the lab's network: the lab bridge's tx_bytes (frames
    one lab host sends another are switched inside the bridge and do not count; what the controller sends, over
    the published SSH ports too, does)."""
    from tritonops.lab.containers import network_name
    from tritonops.lab.engine import existing_client

    network = existing_client().networks.get(network_name(prefix))
    bridge = (network.attrs.get("Options") or {}).get("com.docker.network.bridge.name") or f"br-{network.id[:12]}"
    counter = Path("/sys/class/net") / bridge / "statistics" / "tx_bytes"
    return lambda: int(counter.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", default=os.environ.get("TRITONOPS_IMAGE_LAB_STATE", "/tmp/tritonops-imgtest"))
    parser.add_argument("--prefix", default="tritonops-imgtest")
    parser.add_argument("--port-base", type=int, default=22420)
    parser.add_argument("--base", default=TRITON_TAG,
                        help="base image on the build host (default: the lab's Triton, as the lab's inventory "
                             "names it; every full lab host holds it, so by default only the layers above it travel)")
    parser.add_argument("--sizes", default="1,2,4,8")
    parser.add_argument("--fanout", type=int, default=2, help="tritonops_relay_fanout")
    parser.add_argument("--through-controller", action="store_true",
                        help="no tritonops_relay_address: the hosts' dial address is loopback, so every host "
                             "falls back to the controller (the path before issue #29)")
    parser.add_argument("--bare-targets", action="store_true",
                        help="the targets lose every image, the lab's Triton base too: the whole image travels "
                             "(by default they keep the base, as hosts that ran an earlier image do, and only the "
                             "layers above it travel)")
    parser.add_argument("--down", action="store_true", help="remove the lab hosts afterwards")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]

    request = LabRequest(tuple(HostSpec(name, profile, "full")
                               for name, profile in zip((BUILDER,) + TARGETS[:max(sizes)], PROFILES)))
    started = time.monotonic()
    state = lab_api.up(request, state_dir=args.state_dir, name_prefix=args.prefix, port_base=args.port_base)
    if state.results.failed:
        print("lab up failed:", [(r.host, r.msg) for r in state.results.failed], file=sys.stderr)
        return 1
    print(f"lab ready in {time.monotonic() - started:.0f} s ({len(state.hosts)} full hosts)", file=sys.stderr)
    transport = open_transport(state.connection(BUILDER))
    try:
        index_url = serve_on_host(transport, INDEX_PORT)
    finally:
        transport.close()

    rows = []
    sent = into_lab_network(args.prefix)
    with tempfile.TemporaryDirectory() as tmp:
        def inventory(names) -> list:
            hosts = {}
            for h in state.hosts:
                if h.name in names:
                    hosts[h.name] = {"ansible_host": h.address, "ansible_port": h.port}
                    if not args.through_controller:
                        hosts[h.name]["tritonops_relay_address"] = h.network_address
            inv = Path(tmp) / f"inv{len(names)}.yml"
            inv.write_text(yaml.safe_dump({"all": {"hosts": hosts, "vars": {
                "ansible_user": "root", "ansible_ssh_private_key_file": str(state.key_file),
                "tritonops_known_hosts_file": str(state.known_hosts_file), "tritonops_triton_image": args.base,
                "tritonops_vllm_version": LAB_VLLM_VERSION, "tritonops_build_host": BUILDER,
                "tritonops_relay_fanout": args.fanout,
                "tritonops_pip_index_url": index_url, "tritonops_pip_trusted_host": "127.0.0.1"}}}))
            return load_inventory([str(inv)]).select(None)

        warm = build_images(inventory((BUILDER,)))  # the build, once: every N then only distributes
        if any(r.failed for r in warm.results):
            print("build failed:", [(r.host, r.msg) for r in warm.results], file=sys.stderr)
            return 1
        for n in sizes:
            targets = TARGETS[:n]
            selected = inventory((BUILDER,) + targets)
            # the image by its ID too: a copy left untagged would make the run a re-tag
            drop = ("docker images -aq" if args.bare_targets else
                    f"(docker images -q --no-trunc tritonserver; echo {warm.images[0]['image_id']})")
            for target in targets:
                lab_api_ssh(state, target, f"{drop} | sort -u | xargs -r docker rmi -f >/dev/null 2>&1; true")
                if holds_image(state, target, warm.images[0]["image_id"]):
                    print(f"N={n}: {target} still holds the image after its removal (a container uses it?): the run "
                          "would measure a re-tag, not a transfer", file=sys.stderr)
                    return 1
            w0, t0 = sent(), time.monotonic()
            first = build_images(selected)
            t1, w1 = time.monotonic(), sent()
            failed = [(r.host, r.msg) for r in first.results if r.failed]
            if failed:
                print(f"N={n}: failures {failed}", file=sys.stderr)
                return 1
            again = build_images(selected)
            t2 = time.monotonic()
            size = first.images[0]["size_bytes"]
            by = {r.host: r.payload or {} for r in first.results}
            received = [by[t].get("bytes_received", 0) for t in targets]
            sources = sorted({f"{by[t].get('source')}->{t}" for t in targets})
            fallbacks = sum(1 for t in targets if by[t].get("fallback"))
            rows.append((n, size, first.bytes_out, w1 - w0, min(received), max(received), t1 - t0, fallbacks,
                         again.bytes_out, t2 - t1, [r.status for r in again.results], sources))
    mib = 1 << 20
    base_time = next((r[6] for r in rows if r[0] == 1), None)
    print(f"path: {'through the controller' if args.through_controller else f'host to host, fan-out {args.fanout}'}"
          f"; targets {'bare' if args.bare_targets else 'holding the base'}")
    print(f"{'N':>2} {'image MiB':>10} {'image out MiB':>14} {'out/size':>9} {'into lab net MiB':>17} "
          f"{'net/size':>9} {'received MiB min/max':>21} {'time s':>7} {'t/t(N=1)':>9} {'fallbacks':>9} "
          f"{'no-op bytes':>12} {'no-op s':>8}")
    for n, size, out, wrote, lo, hi, secs, fallbacks, noop, noop_s, statuses, sources in rows:
        ratio = f"{secs / base_time:.2f}" if base_time else "-"
        print(f"{n:>2} {size / mib:>10.1f} {out / mib:>14.1f} {out / size:>9.3f} {wrote / mib:>17.2f} "
              f"{wrote / size:>9.3f} {f'{lo / mib:.1f}/{hi / mib:.1f}':>21} {secs:>7.1f} {ratio:>9} "
              f"{fallbacks:>9} {noop:>12} {noop_s:>8.1f}  {','.join(sorted(set(statuses)))}")
        print(f"   hops: {' '.join(sources)}")
    if args.down:
        lab_api.down(state_dir=args.state_dir, name_prefix=args.prefix)
    return verdict(goals(rows, host_to_host=not args.through_controller))


def holds_image(state, host: str, image_id: str) -> bool:
    """Whether the lab host still has the image (docker image inspect finds it)."""
    import shlex
    import subprocess

    done = subprocess.run(state.ssh_argv(host, shlex.join(["docker", "image", "inspect", "--format", "{{.Id}}",
                                                            image_id])), capture_output=True, timeout=120)
    return done.returncode == 0


def lab_api_ssh(state, host: str, command: str) -> None:
    import subprocess

    subprocess.run(state.ssh_argv(host, command), capture_output=True, timeout=120, check=True)


if __name__ == "__main__":
    sys.exit(main())
