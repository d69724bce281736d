#!/usr/bin/env python3
"""A no-op `tritonops deploy` of the lab against a `probe` of the same hosts, in the same run.

Converges the lab once (a first deploy, not measured), then --repeat times, alternating:
  - probe the hosts (the facts every run starts with), timed;
  - deploy again, timed, counting what it moved and wrote: image and weights bytes from the controller, bytes
    each host received from another (the image and weights relays), steps carried out (tasks `changed`), new
    releases, and the command-channel traffic (commands run, bytes sent and received over SSH).
Prints the best and median times and the ratio deploy/probe. Goal: 0 bytes of weights or image (from the
controller or host to host), 0 writes, at most 2x the probe's time (medians). Ends with each goal met or MISSED;
exits 1 when one missed.

    tritonops lab up            # the default lab (inventory/lab.yml)
    python bench/deploy_noop.py [-i inventory/lab.yml] [--repeat 5] [--model DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tritonops.cli.cmd_deploy import default_playbook, default_roles_path  # noqa: E402
from tritonops.deploy.flow import deploy  # noqa: E402
from tritonops.deploy.moved import BytesMoved  # noqa: E402
from tritonops.deploy.run import DeployOptions  # noqa: E402
from tritonops.facts.probe import probe_hosts  # noqa: E402
from tritonops.inventory import load_inventory  # noqa: E402
from tritonops.playbook import load_run_inputs  # noqa: E402
from tritonops.sizing.engine_plan import SizingRequest  # noqa: E402

from goals import Goal, verdict  # noqa: E402  (bench/ is the script's folder)

GOAL_OVER_PROBE_X = 2.0   # a no-op deploy against a probe of the same hosts, median over median


def goals(moved: BytesMoved, writes: int, deploy_over_probe: float, all_ok: bool) -> list[Goal]:
    """No byte of image or weights from the controller, none relayed host to host, no write (task changed), at most
    2x the probe's time, every deploy ok."""
    relayed = ", ".join(f"{host} {count:,}" for host, count in sorted(moved.relayed.items()) if count)
    return [Goal("no-op image bytes from the controller", moved.image, 0, unit="B"),
            Goal("no-op weights bytes from the controller", moved.weights, 0, unit="B"),
            Goal("no-op bytes relayed host to host", moved.relayed_total, 0, unit="B", detail=relayed),
            Goal("no-op writes (tasks changed)", writes, 0),
            Goal("no-op deploy time / probe time (medians)", round(deploy_over_probe, 3), GOAL_OVER_PROBE_X, unit="x"),
            Goal("no-op deploys that failed", 0 if all_ok else 1, 0)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--inventory", default=str(REPO / "inventory" / "lab.yml"))
    parser.add_argument("--limit", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--model", default=None, help="model for hosts without tritonops_model")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="K=V",
                        help="extra variables, as for deploy (e.g. tritonops_serve=false: stop after the release)")
    args = parser.parse_args()

    playbook = default_playbook("deploy.yml")
    from tritonops.playbook import parse_extra_vars

    extra = parse_extra_vars(args.extra_vars)
    options = DeployOptions(default_model=args.model, request=SizingRequest(model_ref=args.model or ""))

    def inputs():  # read again by each deploy, as each `tritonops deploy` does
        return load_run_inputs(playbook, [args.inventory], roles_path=default_roles_path(playbook),
                               limit=args.limit, extra_vars=extra)

    hosts = load_inventory([args.inventory]).select(args.limit)
    specs = [host.connection for host in hosts]

    started = time.perf_counter()
    first = deploy(inputs(), options)
    print(f"converge: {time.perf_counter() - started:.2f} s, ok={first.ok}, "
          f"changed={sum(r.status == 'changed' for r in first.results)}")
    if not first.ok:
        for result in first.results:
            if result.failed:
                print(f"  {result.host} {result.task}: {result.msg}")
        return 1

    probes, deploys, moved = [], [], []
    for _ in range(args.repeat):
        started = time.perf_counter()
        probe = probe_hosts(specs, forks=10)
        probes.append(time.perf_counter() - started)
        assert all(host.status == "ok" for host in probe.hosts), [h.msg for h in probe.hosts]
        started = time.perf_counter()
        report = deploy(inputs(), options)
        deploys.append(time.perf_counter() - started)
        moved.append(report)

    # the same, as a user runs them: `tritonops probe` and `tritonops deploy` from a shell
    import subprocess

    def cli(*argv) -> float:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "tritonops", *argv, "-i", args.inventory, *(
            ["--limit", args.limit] if args.limit else []), "--json"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-2000:]
        return time.perf_counter() - started

    extra_cli = [item for pair in (("-e", e) for e in args.extra_vars) for item in pair]
    model_cli = ["--model", args.model] if args.model else []
    cli_probes = [cli("probe") for _ in range(args.repeat)]
    cli_deploys = [cli("deploy", *model_cli, *extra_cli) for _ in range(args.repeat)]

    last = moved[-1]
    writes = sum(r.status == "changed" for report in moved for r in report.results)
    nothing_moved = sum((BytesMoved.of(report) for report in moved), BytesMoved())
    print(f"hosts: {len(specs)} ({', '.join(h.name for h in hosts)}), repeats: {args.repeat}")
    print(f"probe : best {min(probes):.2f} s, median {statistics.median(probes):.2f} s")
    print(f"deploy: best {min(deploys):.2f} s, median {statistics.median(deploys):.2f} s "
          f"(no-op; ratio to probe: best {min(deploys) / min(probes):.2f}x, "
          f"median {statistics.median(deploys) / statistics.median(probes):.2f}x)")
    print(f"as commands (python start-up included): probe best {min(cli_probes):.2f} s, deploy best "
          f"{min(cli_deploys):.2f} s, ratio {min(cli_deploys) / min(cli_probes):.2f}x "
          f"(median {statistics.median(cli_deploys) / statistics.median(cli_probes):.2f}x)")
    print(f"no-op deploys: bytes moved: {nothing_moved.summary()}; "
          f"writes (tasks changed) {writes}, all ok: {all(r.ok for r in moved)}")
    print(f"one no-op deploy over SSH command channels: {last.traffic.commands} commands, "
          f"{last.traffic.sent:,} bytes sent, {last.traffic.received:,} bytes received")
    return verdict(goals(nothing_moved, writes,
                         statistics.median(deploys) / statistics.median(probes), all(r.ok for r in moved)))


if __name__ == "__main__":
    sys.exit(main())
