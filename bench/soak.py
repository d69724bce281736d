#!/usr/bin/env python3
"""Soak: K deploy -> rollback -> deploy cycles on the lab's full hosts, then what is left behind.

Each cycle: a good release (a changed tritonops_max_num_seqs: a new release that passes its gate),
`rollback` (back to the release before it), then a bad release (an engine argument the engine
rejects: the gate fails, the failed container is parked, the previous release serves again). Before
the first cycle and after the last, every host is read from inside its container (not over SSH,
so the reading opens no session): the deployment's containers, images, release folders against the
retention (tritonops_keep_releases newest, plus current and previous), SSH sessions, lock files,
processes, disk use of /opt/tritonops and /var/lib/docker; on this machine, the controller's open
file descriptors and threads. A deployment of its own (`soak`, ports 19500-19502), removed at the end.

    tritonops lab up && python bench/soak.py [-K 30] [-i inventory/lab.yml] [--limit HOSTS] [-e JSON]
Goal: every good deploy switches, every rollback passes, every bad deploy rolls back; leftovers within
the retention (0 beyond it), no lock, no SSH session, process or file descriptor more than before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tritonops.cli.cmd_deploy import default_playbook, default_roles_path  # noqa: E402
from tritonops.deploy.flow import deploy  # noqa: E402
from tritonops.deploy.rollback import rollback  # noqa: E402
from tritonops.deploy.run import DeployOptions  # noqa: E402
from tritonops.inventory import load_inventory  # noqa: E402
from tritonops.playbook import load_run_inputs  # noqa: E402
from tritonops.playbook.host_task import TaskOutcome  # noqa: E402
from tritonops.serving.outcome import ServeOutcome  # noqa: E402
from tritonops.lab.faults import deployment_inventory, host_exec, host_snapshot, tcp_connections_to  # noqa: E402

ROOT = "/opt/tritonops"
KEEP = 5  # tritonops_keep_releases' default (tritonops/roles/model_repository/defaults/main.yml)
BAD = {"tritonops_engine_args": {"no_such_engine_arg": 1}, "tritonops_engine_args_unchecked": ["no_such_engine_arg"]}


def failures(report) -> list[str]:
    return [f"{r.host} {r.task}: {r.msg}" for r in report.results if r.failed or r.status == "unreachable"]


def serve_result(report, host: str):
    """The host's serve task result (its payload names the operation, and says the ServeOutcome)."""
    return next((r for r in report.results if r.host == host and isinstance(r.payload, TaskOutcome)
                 and r.payload.operation == "serve_release"), None)


def controller_counts(ports: set[int]) -> dict:
    """This process (the controller): open file descriptors, threads, SSH connections to the hosts."""
    return {"fds": len(os.listdir("/proc/self/fd")), "threads": threading.active_count(),
            "ssh_connections": tcp_connections_to(ports)}


def run_soak(inventory: str, containers: dict[str, str], cycles: int, *, deployment: str = "soak",
             keep: int = KEEP, say=print, extra_vars: dict | None = None) -> dict:
    """The cycles over the hosts of `inventory` (host name -> its lab container in `containers`), every run with
    `extra_vars` too; returns the figures (see main for their meaning)."""
    playbook, back_book = default_playbook("deploy.yml"), default_playbook("rollback.yml")
    kept = {**(extra_vars or {}), "tritonops_keep_releases": keep}

    def inputs(book: str, extra: dict):
        return load_run_inputs(book, [inventory], roles_path=default_roles_path(book), extra_vars=extra)

    options, back_options = DeployOptions(), DeployOptions(command="rollback")
    ports = {int(host.connection.port or 22) for host in load_inventory([inventory]).hosts}
    clean(containers, deployment)
    first = deploy(inputs(playbook, {**kept, "tritonops_max_num_seqs": 64}), options)
    if failures(first):
        raise SystemExit("the first deploy failed: " + "; ".join(failures(first)))
    before = {name: host_snapshot(c, ROOT, deployment) for name, c in containers.items()}
    ctl_before = controller_counts(ports)
    seconds, problems = [], []
    for cycle in range(cycles):
        started = time.perf_counter()
        good = deploy(inputs(playbook, {**kept, "tritonops_max_num_seqs": 65 + cycle}), options)
        problems += [f"cycle {cycle} good deploy: {f}" for f in failures(good)]
        for name in containers:  # the promise: every good deploy switched `current` to its new release
            served = serve_result(good, name)
            outcome = served.payload.outcome(ServeOutcome) if served is not None else None
            if outcome is None or outcome.status != "switched":
                problems.append(f"cycle {cycle} good deploy on {name} did not switch: "
                                f"{outcome.status if outcome else 'no serve result'}")
        back = rollback(inputs(back_book, kept), back_options)
        problems += [f"cycle {cycle} rollback: {f}" for f in failures(back)]
        bad = deploy(inputs(playbook, {**kept, **BAD, "tritonops_engine_args": {"no_such_engine_arg": cycle + 1}}),
                     options)
        for name in containers:
            served = serve_result(bad, name)
            outcome = served.payload.outcome(ServeOutcome) if served is not None else None
            if outcome is None or (outcome.status, outcome.reason_kind) != ("rolled_back", "unknown engine argument"):
                problems.append(f"cycle {cycle} bad deploy on {name}: {served.msg if served else 'no serve result'}")
        seconds.append(time.perf_counter() - started)
        so_far = f", {len(problems)} problem(s) so far" if problems else ""
        say(f"cycle {cycle + 1}/{cycles}: {seconds[-1]:.1f} s{so_far}")
    after = {name: host_snapshot(c, ROOT, deployment) for name, c in containers.items()}
    ctl_after = controller_counts(ports)
    figures = {"cycles": cycles, "hosts": sorted(containers), "seconds": seconds, "problems": problems,
               "keep": keep, "before": before, "after": after, "controller_before": ctl_before,
               "controller_after": ctl_after, "leftovers": leftovers(before, after, keep)}
    return figures


def leftovers(before: dict, after: dict, keep: int) -> dict:
    """Per host, what exceeds the retention or the state before the first cycle."""
    out = {}
    for name, now in after.items():
        was = before[name]
        releases = set(str(now.get("release_names", "")).split())
        containers = str(now.get("container_names", "")).split()
        orphans = [c for c in containers if "--" in c and c.split("--", 1)[1].removesuffix("-failed") not in releases]
        out[name] = {
            "releases": now.get("releases", 0),
            "releases_beyond_retention": max(0, int(now.get("releases", 0)) - (keep + 2)),
            "partial_releases": now.get("partial", 0),
            "containers": now.get("containers", 0),
            # per replica (a container not parked nor kept aside): itself, and a parked and a failed one per
            # release kept; the bound was one replica's (a host of 4 replicas read 3 beyond with 18 of its 60)
            "containers_beyond_retention": max(0, int(now.get("containers", 0))
                                               - max(1, sum("--" not in c for c in containers)) * (2 * (keep + 2) + 1)),
            "orphan_containers": len(orphans),
            "images_added": int(now.get("images", 0)) - int(was.get("images", 0)),
            "dangling_images": now.get("dangling_images", 0),
            "lock_files": now.get("lock", 0),
            # host-wide: on a lab shared with other runs, theirs count too (read them as an upper bound)
            "host_ssh_sessions_added": int(now.get("ssh_sessions", 0)) - int(was.get("ssh_sessions", 0)),
            "host_processes_added": int(now.get("processes", 0)) - int(was.get("processes", 0)),
            "host_python_c_programs": now.get("python", 0),
            "root_growth_kib": int(now.get("root_kib", 0) or 0) - int(was.get("root_kib", 0) or 0),
            "docker_growth_kib": int(now.get("docker_kib", 0) or 0) - int(was.get("docker_kib", 0) or 0),
        }
    return out


def within_policy(figures: dict) -> list[str]:
    """What breaks the retention policy or leaks (empty: all within)."""
    broken = list(figures["problems"])
    for host, left in figures["leftovers"].items():
        for key in ("releases_beyond_retention", "partial_releases", "containers_beyond_retention", "orphan_containers",
                    "lock_files"):
            if left[key]:
                broken.append(f"{host}: {key} = {left[key]}")
        if left["images_added"] > 0:
            broken.append(f"{host}: images_added = {left['images_added']}")
    before, after = figures["controller_before"], figures["controller_after"]
    if after["ssh_connections"]:
        broken.append(f"controller: {after['ssh_connections']} SSH connection(s) to the hosts still open")
    if after["fds"] - before["fds"] > 4:
        broken.append(f"controller: {after['fds'] - before['fds']} file descriptors more than before the cycles")
    if after["threads"] > before["threads"]:
        broken.append(f"controller: {after['threads'] - before['threads']} threads more than before the cycles")
    return broken


def clean(containers: dict[str, str], deployment: str) -> None:
    for container in containers.values():
        host_exec(container, f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={deployment}) "
                             f">/dev/null 2>&1; rm -rf {ROOT}/{deployment}; true")


def report(figures: dict, say=print) -> None:
    seconds = figures["seconds"]
    say(f"\nsoak: {figures['cycles']} cycles (deploy good -> rollback -> deploy bad) on {len(figures['hosts'])} host(s)"
        f" {', '.join(figures['hosts'])}")
    if seconds:
        say(f"time per cycle: mean {statistics.mean(seconds):.1f} s, median {statistics.median(seconds):.1f} s, "
            f"min {min(seconds):.1f} s, max {max(seconds):.1f} s; first {seconds[0]:.1f} s, last {seconds[-1]:.1f} s")
    keys = list(next(iter(figures["leftovers"].values())).keys())
    say(f"{'':28}" + "".join(f"{h:>14}" for h in figures["hosts"]))
    for key in keys:
        say(f"{key:28}" + "".join(f"{figures['leftovers'][h][key]:>14}" for h in figures["hosts"]))
    ctl_b, ctl_a = figures["controller_before"], figures["controller_after"]
    say(f"controller: fds {ctl_b['fds']} -> {ctl_a['fds']}, threads {ctl_b['threads']} -> {ctl_a['threads']}, "
        f"SSH connections to the hosts {ctl_b['ssh_connections']} -> {ctl_a['ssh_connections']}")
    say("host_* rows are host-wide: other runs on a shared lab count too")
    broken = within_policy(figures)
    say(f"within the retention policy: {'yes' if not broken else 'NO'}")
    for line in broken:
        say(f"  {line}")


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # progress as it happens, also into a file
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-K", "--cycles", type=int, default=30)
    parser.add_argument("-i", "--inventory", default=str(REPO / "inventory" / "lab.yml"), help="the lab's inventory")
    parser.add_argument("--prefix", default="tritonops-lab", help="the lab's name prefix (host containers)")
    parser.add_argument("--limit", default=None, help="comma-separated lab hosts (default: every full host)")
    parser.add_argument("--keep", type=int, default=KEEP, help="tritonops_keep_releases (default 5)")
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    parser.add_argument("--keep-deployment", action="store_true", help="leave the soak deployment on the hosts")
    parser.add_argument("-e", "--extra-vars", default="{}",
                        help="a JSON object passed to every run (e.g. '{\"tritonops_replicas\": 2}': spare GPUs, "
                             "Kamal's order)")
    args = parser.parse_args()
    if args.cycles < 1:
        parser.error("-K must be at least 1")
    lab = yaml.safe_load(Path(args.inventory).read_text())
    hosts = args.limit.split(",") if args.limit else None
    data = deployment_inventory(lab, "soak", 19500, hosts=hosts)
    containers = {name: f"{args.prefix}-{name}" for name in data["all"]["hosts"]}
    with tempfile.TemporaryDirectory(prefix="tritonops-soak-") as tmp:
        inventory = Path(tmp) / "soak.yml"
        inventory.write_text(yaml.safe_dump(data))
        try:
            figures = run_soak(str(inventory), containers, args.cycles, keep=args.keep,
                               extra_vars=json.loads(args.extra_vars))
        finally:
            if not args.keep_deployment:
                clean(containers, "soak")
    report(figures)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2, default=str))
    return 0 if not within_policy(figures) else 1


if __name__ == "__main__":
    sys.exit(main())
