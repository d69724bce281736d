"""Fan-out of a controller folder's weights in the lab: bytes out of the controller and wall time against N.

For N = 1, 2, 4, 8 hosts that lack the folder: `relay_weights` brings it (the first host from the controller, the
others host to host), and we print the weights bytes that went through the controller and, measured
independently, every byte this machine sent into the lab's network (the lab bridge's tx_bytes, as
bench/image_fanout.py measures it), each against the folder's size; where each host's copy came from; the wall
time and its ratio to N = 1's; then the same run again, which must move 0 bytes. Goal: that 0, and host to host one
folder out of the controller whatever N; ends with each goal met or MISSED, exits 1 when one missed.

    python bench/weights_fanout.py                      # host to host (weights/relay.py), fan-out 2
    python bench/weights_fanout.py --through-controller # every host pushed from the controller (the path before)

Light lab hosts w1..w8 (sshd and python3 are all the weights need), created if missing (seconds), under their
own name prefix, state dir and ports; the folder is random bytes in a few files, made in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from image_fanout import into_lab_network  # noqa: E402  (bench/ is the script's folder)

from tritonops.lab import api as lab_api  # noqa: E402
from tritonops.lab.request import HostSpec, LabRequest  # noqa: E402
from tritonops.planning.relay import RelayPeer  # noqa: E402
from tritonops.relay.run import RelayHost  # noqa: E402
from tritonops.transport.pool import open_transport  # noqa: E402
from tritonops.weights.operation import ModelWeightsArgs, ensure_weights_on_hosts  # noqa: E402
from tritonops.weights.relay import relay_weights  # noqa: E402

from goals import Goal, verdict  # noqa: E402

GOAL_OUT_OVER_SIZE = 1.0   # host to host: one folder leaves the controller, whatever N


def goals(rows: list[tuple], size: int, host_to_host: bool) -> list[Goal]:
    """Per N (rows: N, weights bytes out, into the lab net, s, no-op bytes, no-op s, hops): the same run again moves 0
    bytes; host to host, at most one folder's bytes leave the controller (through it, N folders by design)."""
    found = []
    for n, out, _, _, noop, _, _ in rows:
        if host_to_host:
            found.append(Goal(f"N={n}: weights bytes through the controller / folder size",
                              round(out / size, 4) if size else None, GOAL_OUT_OVER_SIZE))
        found.append(Goal(f"N={n}: bytes moved by the same run again", noop, 0))
    return found

HOSTS = tuple(f"w{i}" for i in range(1, 9))
DEPLOYMENT = "bench-fanout"


def make_folder(path: Path, mib: int) -> int:
    """A model-like folder: a config, a tokenizer and the rest in shards of at most 64 MiB (random bytes)."""
    path.mkdir()
    (path / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    (path / "tokenizer.json").write_bytes(os.urandom(1 << 20))
    left, index = mib << 20, 1
    while left > 0:
        chunk = min(left, 64 << 20)
        (path / f"model-{index:05d}.safetensors").write_bytes(os.urandom(chunk))
        left, index = left - chunk, index + 1
    return sum(f.stat().st_size for f in path.iterdir())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state-dir", default="/tmp/tritonops-wfanout")
    parser.add_argument("--prefix", default="tritonops-wfanout")
    parser.add_argument("--port-base", type=int, default=22440)
    parser.add_argument("--sizes", default="1,2,4,8")
    parser.add_argument("--mib", type=int, default=128, help="the folder's size in MiB")
    parser.add_argument("--fanout", type=int, default=2, help="tritonops_relay_fanout")
    parser.add_argument("--through-controller", action="store_true",
                        help="every host pushed from the controller over SFTP (the path before issue #29)")
    parser.add_argument("--down", action="store_true", help="remove the lab hosts afterwards")
    args = parser.parse_args()
    sizes = [int(n) for n in args.sizes.split(",")]

    request = LabRequest(tuple(HostSpec(name, "nogpu", "light") for name in HOSTS[:max(sizes)]))
    state = lab_api.up(request, state_dir=args.state_dir, name_prefix=args.prefix, port_base=args.port_base)
    if state.results.failed:
        print("lab up failed:", [(r.host, r.msg) for r in state.results.failed], file=sys.stderr)
        return 1
    sent = into_lab_network(args.prefix)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        size = make_folder(Path(tmp) / "model", args.mib)
        weights = ModelWeightsArgs(source="controller_dir", path=str(Path(tmp) / "model"), deployment=DEPLOYMENT)
        for n in sizes:
            names = HOSTS[:n]
            transports = {name: open_transport(state.connection(name)) for name in names}
            try:
                for transport in transports.values():
                    transport.run(f"rm -rf /opt/tritonops/{DEPLOYMENT}", timeout=60)
                members = [RelayHost(name, transports[name],
                                     RelayPeer(name, state.host(name).network_address, 22, "root")) for name in names]
                w0, t0 = sent(), time.monotonic()
                if args.through_controller:
                    group = ensure_weights_on_hosts([state.connection(name) for name in names], weights)
                    out = sum(r.payload.bytes_moved for r in group if r.payload is not None)
                    hops = sorted(f"controller->{r.host}" for r in group)
                    failed = [(r.host, r.msg) for r in group if r.failed]
                else:
                    report = relay_weights(weights, members, fanout=args.fanout)
                    out = report.bytes_out
                    hops = sorted(f"{a.source}->{a.host}" for a in report.arrivals.values())
                    failed = [(a.host, a.msg) for a in report.arrivals.values() if a.status == "failed"]
                t1, w1 = time.monotonic(), sent()
                if failed:
                    print(f"N={n}: failures {failed}", file=sys.stderr)
                    return 1
                again = relay_weights(weights, members, fanout=args.fanout)
                t2 = time.monotonic()
                rows.append((n, out, w1 - w0, t1 - t0, again.bytes_out, t2 - t1, hops))
            finally:
                for transport in transports.values():
                    transport.close()
    mib = 1 << 20
    base_time = next((r[3] for r in rows if r[0] == 1), None)
    print(f"path: {'through the controller' if args.through_controller else f'host to host, fan-out {args.fanout}'}"
          f"; folder {size / mib:.1f} MiB")
    print(f"{'N':>2} {'weights out MiB':>16} {'out/size':>9} {'into lab net MiB':>17} {'net/size':>9} "
          f"{'time s':>7} {'t/t(N=1)':>9} {'no-op bytes':>12} {'no-op s':>8}")
    for n, out, wrote, secs, noop, noop_s, hops in rows:
        ratio = f"{secs / base_time:.2f}" if base_time else "-"
        print(f"{n:>2} {out / mib:>16.1f} {out / size:>9.3f} {wrote / mib:>17.2f} {wrote / size:>9.3f} "
              f"{secs:>7.1f} {ratio:>9} {noop:>12} {noop_s:>8.1f}")
        print(f"   from: {' '.join(hops)}")
    if args.down:
        lab_api.down(state_dir=args.state_dir, name_prefix=args.prefix)
    return verdict(goals(rows, size, host_to_host=not args.through_controller))


if __name__ == "__main__":
    sys.exit(main())
