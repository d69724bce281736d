"""Fan-out of the vllm_env image in the lab: bytes out of the controller vs the image size.

For N = 1, 2, 4 target hosts: the targets lose their vllm_env image, `build_images` streams it
from the build host (docker save -> controller -> docker load), and we print the bytes that
left the controller and what each host received, against the image size; then the same run
again, which must move 0 bytes.

    python bench/image_fanout.py            # lab hosts img-build + img-t1..img-t4 (created if missing)

Runs against real lab hosts (full: sshd + their own dockerd); takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402

from tritonops.image.api import build_images  # noqa: E402
from tritonops.inventory import load_inventory  # noqa: E402
from tritonops.lab import api as lab_api  # noqa: E402
from tritonops.lab.request import HostSpec, LabRequest  # noqa: E402
from tritonops.lab.wheelhouse import LAB_VLLM_VERSION, serve_on_host  # noqa: E402
from tritonops.transport.pool import open_transport  # noqa: E402

BUILDER = "img-build"
TARGETS = ("img-t1", "img-t2", "img-t3", "img-t4")
PROFILES = ("4090", "2080ti", "t4", "4090", "3090")
INDEX_PORT = 18431


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", default=os.environ.get("TRITONOPS_IMAGE_LAB_STATE", "/tmp/tritonops-imgtest"))
    parser.add_argument("--prefix", default="tritonops-imgtest")
    parser.add_argument("--port-base", type=int, default=22420)
    parser.add_argument("--base", default="tritonops-labtest/tritonserver:24.10-py3-pip",
                        help="base image on the build host (the lab tests derive one with pip)")
    parser.add_argument("--sizes", default="1,2,4")
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
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            targets = TARGETS[:n]
            names = (BUILDER,) + targets
            hosts = {h.name: {"ansible_host": h.address, "ansible_port": h.port} for h in state.hosts
                     if h.name in names}
            inv = Path(tmp) / f"inv{n}.yml"
            inv.write_text(yaml.safe_dump({"all": {"hosts": hosts, "vars": {
                "ansible_user": "root", "ansible_ssh_private_key_file": str(state.key_file),
                "tritonops_known_hosts_file": str(state.known_hosts_file), "tritonops_triton_image": args.base,
                "tritonops_vllm_version": LAB_VLLM_VERSION, "tritonops_build_host": BUILDER,
                "tritonops_pip_index_url": index_url, "tritonops_pip_trusted_host": "127.0.0.1"}}}))
            selected = load_inventory([str(inv)]).select(None)
            for target in targets:
                lab_api_ssh(state, target, "docker images -q --no-trunc tritonserver | sort -u | "
                                           "xargs -r docker rmi -f >/dev/null; true")
            t0 = time.monotonic()
            first = build_images(selected)
            t1 = time.monotonic()
            failed = [(r.host, r.msg) for r in first.results if r.failed]
            if failed:
                print(f"N={n}: failures {failed}", file=sys.stderr)
                return 1
            again = build_images(selected)
            t2 = time.monotonic()
            size = first.images[0]["size_bytes"]
            received = [first.bytes_by_host.get(t, 0) for t in targets]
            rows.append((n, size, first.bytes_out, min(received), max(received), t1 - t0, again.bytes_out, t2 - t1,
                         [r.status for r in again.results]))
    mib = 1 << 20
    print(f"{'N':>2} {'image MiB':>10} {'out of controller MiB':>22} {'per host MiB (min/max)':>23} "
          f"{'out / (N x size)':>17} {'time s':>7} {'no-op bytes':>12} {'no-op s':>8}  no-op statuses")
    for n, size, out, lo, hi, secs, noop, noop_s, statuses in rows:
        print(f"{n:>2} {size / mib:>10.1f} {out / mib:>22.1f} {f'{lo / mib:.1f}/{hi / mib:.1f}':>23} "
              f"{out / (n * size):>17.3f} {secs:>7.1f} {noop:>12} {noop_s:>8.1f}  {','.join(sorted(set(statuses)))}")
    if args.down:
        lab_api.down(state_dir=args.state_dir, name_prefix=args.prefix)
    return 0 if all(r[6] == 0 for r in rows) else 1


def lab_api_ssh(state, host: str, command: str) -> None:
    import subprocess

    subprocess.run(state.ssh_argv(host, command), capture_output=True, timeout=120, check=True)


if __name__ == "__main__":
    sys.exit(main())
