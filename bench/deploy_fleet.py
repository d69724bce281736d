#!/usr/bin/env python3
"""A full deploy (weights, release, Triton started and gated) to 1, 2 and 3 lab hosts at once, against
the one-host time; then a no-op redeploy of the same hosts (restarts, bytes).

Each size deploys a deployment of its own (`bench-fleet-N`, its own ports), so every run does the
whole job: weights pushed, release written, container started and gated. Removed afterwards.

    tritonops lab up && python bench/deploy_fleet.py [-i inventory/lab.yml]
Goal: N hosts in parallel within 1.2x of one host; the no-op: 0 restarts, 0 bytes (image and weights, from the
controller or host to host); the gate notices Triton's models ready within 1 s (the slowest host read; none
read: missed). Ends with each goal met or MISSED; exits 1 when one missed (the replicas axis: its no-op's
restarts and bytes moved).

    python bench/deploy_fleet.py --replicas 1,2,4,8 [--host node-h200x8]

The replicas axis (issue #22): on one host, a deployment of N replicas (`tritonops_replicas`, TP 1) against
one replica, then its no-op redeploy (restarts counted over every replica's container). Replicas roll one at
a time, so the deploy grows with N by design (each replica's start and gate); on the 2-core lab each
Triton start also competes for the same two cores. "SSH cmds": the commands the first deploy ran over the
host's session (facts, files, each replica's docker commands and gate).

"ready -> gate" is measured on each host: a watcher started over SSH before the deploy polls the
model's /ready every 20 ms and notes when it first answers 200; the gate records when it saw every
model ready (release.json, gates[-1].models_ready_at); the difference is the gate's lag (the
watcher's 20 ms resolution aside). Both clocks are the host's.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tritonops.cli.cmd_deploy import default_playbook, default_roles_path  # noqa: E402
from tritonops.deploy.flow import deploy  # noqa: E402
from tritonops.deploy.moved import BytesMoved  # noqa: E402
from tritonops.deploy.run import DeployOptions  # noqa: E402
from tritonops.inventory import load_inventory  # noqa: E402
from tritonops.playbook import load_run_inputs  # noqa: E402
from tritonops.playbook.host_task import TaskOutcome  # noqa: E402

from goals import Goal, verdict  # noqa: E402  (bench/ is the script's folder)

GOAL_PARALLEL_X = 1.2   # N hosts at once against one host
GOAL_GATE_LAG_S = 1.0   # Triton's models ready -> the gate saw them


def fleet_goals(rows: list[tuple]) -> list[Goal]:
    """The hosts axis's goals from its rows (hosts, deploy s, serve+gate s, ready->gate s, hosts read, no-op s,
    restarts, changed, bytes moved): every N within 1.2x of one host's deploy, a no-op that restarts nothing and
    moves no byte (image or weights, from the controller or host to host), the gate noticing the models ready
    within 1 s."""
    single = rows[0][1] if rows else None
    found = []
    for count, seconds, _, lag, _, _, restarts, _, moved in rows:
        found += [Goal(f"{count} host(s): deploy time / one host's", seconds / single if single else None,
                       GOAL_PARALLEL_X, unit="x")] if count > 1 else []
        found += [Goal(f"{count} host(s): ready -> gate", lag, GOAL_GATE_LAG_S, unit="s"),
                  Goal(f"{count} host(s): no-op restarts", restarts, 0),
                  Goal(f"{count} host(s): no-op bytes moved", moved.total, 0, unit="B", detail=moved.summary())]
    return found


def replicas_goals(rows: list[tuple]) -> list[Goal]:
    """The replicas axis's goals from its rows (replicas, deploy s, serve+gates s, no-op s, restarts, changed,
    bytes moved): the no-op restarts no replica and moves no byte (the deploy grows with N by design)."""
    return [goal for count, _, _, _, restarts, _, moved in rows
            for goal in (Goal(f"{count} replica(s): no-op restarts", restarts, 0),
                         Goal(f"{count} replica(s): no-op bytes moved", moved.total, 0, unit="B",
                              detail=moved.summary()))]


# Runs on the host: poll a model's /ready every 20 ms, print the Unix time it first answers 200.
WATCHER = """
import sys, time, urllib.request
url, end = "http://127.0.0.1:%d/v2/models/%s/ready" % (int(sys.argv[1]), sys.argv[2]), time.time() + 600
while time.time() < end:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            if answer.status == 200:
                print(time.time())
                break
    except OSError:
        pass
    time.sleep(0.02)
"""


def ssh_argv(host, command: str) -> list[str]:
    spec = host.connection
    argv = ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-p", str(spec.port or 22)]
    for key in spec.key_files:
        argv += ["-i", key]
    if spec.known_hosts_file:
        argv += ["-o", f"UserKnownHostsFile={spec.known_hosts_file}"]
    return argv + [f"{spec.user or 'root'}@{spec.host}", command]


def ssh(host, command: str, *, prints: bool = True) -> str:
    """The command's output on the host; a failure (or, for a read, no output) stops the bench: two failed
    reads would compare equal."""
    done = subprocess.run(ssh_argv(host, command), capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or (prints and not done.stdout.strip()):
        raise SystemExit(f"{host.name}: {command!r} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    return done.stdout


def watch_ready(host, port: int, model: str) -> subprocess.Popen:
    command = f"python3 -c {shlex.quote(WATCHER)} {int(port)} {shlex.quote(model)}"
    return subprocess.Popen(ssh_argv(host, command), stdout=subprocess.PIPE, text=True)


def gate_lag(host, deployment: str, watcher: subprocess.Popen) -> float | None:
    """Seconds between the model answering ready and the gate noticing, on `host`."""
    out, _ = watcher.communicate(timeout=60)
    record = ssh(host, f"cat /opt/tritonops/{shlex.quote(deployment)}/current/release.json")
    try:
        noticed = json.loads(record)["gates"][-1]["models_ready_at"]
        return float(noticed) - float(out.strip())
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def replica_names(deployment: str, count: int) -> list[str]:
    from tritonops.values.containers import replica_container

    return [replica_container(deployment, index) for index in range(count)]


def replicas_axis(args) -> int:
    hosts = {h.name: h for h in load_inventory([args.inventory]).hosts}
    host = hosts.get(args.host)
    if host is None:
        print(f"no host {args.host} in {args.inventory}")
        return 2
    playbook = default_playbook("deploy.yml")
    rows = []
    for count in (int(c) for c in args.replicas.split(",")):
        name = f"bench-replicas-{count}"
        base = 9300 + 100 * count
        extra = {"tritonops_deployment": name, "tritonops_replicas": count, "tritonops_tensor_parallel_size": 1,
                 "tritonops_build_host": host.name,  # the image the demo left there; no other host in the run
                 "tritonops_http_port": base, "tritonops_grpc_port": base + 1, "tritonops_metrics_port": base + 2}

        def inputs():
            return load_run_inputs(playbook, [args.inventory], roles_path=default_roles_path(playbook),
                                   limit=host.name, extra_vars=extra)
        started = time.perf_counter()
        first = deploy(inputs(), DeployOptions())
        seconds = time.perf_counter() - started
        try:
            if not first.ok:
                print(f"{count} replica(s): failed: " + "; ".join(f"{r.task}: {r.msg}" for r in first.results if r.failed))
                return 1
            names = replica_names(name, count)
            starts = "docker inspect --format '{{.State.StartedAt}}' " + " ".join(names)
            before = ssh(host, starts)
            started = time.perf_counter()
            again = deploy(inputs(), DeployOptions())
            noop = time.perf_counter() - started
            if not again.ok:
                print(f"{count} replica(s): the no-op deploy failed")
                return 1
            after = ssh(host, starts)
            restarts = sum(a != b for a, b in zip(before.split(), after.split()))
            serve = [r.elapsed_s for r in first.results
                     if isinstance(r.payload, TaskOutcome) and r.payload.operation == "serve_release"]
            rows.append((count, seconds, max(serve, default=float("nan")), noop, restarts,
                         sum(r.status == "changed" for r in again.results), BytesMoved.of(again),
                         first.traffic.commands))
        finally:
            ssh(host, f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={name}) >/dev/null 2>&1; "
                      f"rm -rf /opt/tritonops/{shlex.quote(name)}", prints=False)
    single = rows[0][1]
    print(f"{'replicas':>8} {'deploy s':>9} {'x one':>6} {'serve+gates s':>13} {'SSH cmds':>8} {'no-op s':>8} "
          f"{'restarts':>8} {'changed':>7} {'moved B':>7}")
    for count, seconds, serve, noop, restarts, changed, moved, commands in rows:
        print(f"{count:>8} {seconds:>9.2f} {seconds / single:>6.2f} {serve:>13.2f} {commands:>8} {noop:>8.2f} "
              f"{restarts:>8} {changed:>7} {moved.total:>7}")
    return verdict(replicas_goals([row[:7] for row in rows]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--inventory", default=str(REPO / "inventory" / "lab.yml"))
    parser.add_argument("--replicas", help="the replicas axis on one host instead: counts, e.g. 1,2,4,8")
    parser.add_argument("--host", default="node-h200x8", help="the host of the replicas axis")
    args = parser.parse_args()
    if args.replicas:
        return replicas_axis(args)
    hosts = load_inventory([args.inventory]).hosts
    playbook = default_playbook("deploy.yml")
    rows = []
    for count in range(1, len(hosts) + 1):
        chosen = hosts[:count]
        name = f"bench-fleet-{count}"
        extra = {"tritonops_deployment": name, "tritonops_http_port": 9100 + 10 * count,
                 "tritonops_grpc_port": 9101 + 10 * count, "tritonops_metrics_port": 9102 + 10 * count}
        options = DeployOptions()

        def inputs():
            return load_run_inputs(playbook, [args.inventory], roles_path=default_roles_path(playbook),
                                   limit=",".join(h.name for h in chosen), extra_vars=extra)
        watchers = {h.name: watch_ready(h, extra["tritonops_http_port"], "vllm_model") for h in chosen}
        started = time.perf_counter()
        first = deploy(inputs(), options)
        seconds = time.perf_counter() - started
        lags = [gate_lag(h, name, watchers[h.name]) for h in chosen]
        if not first.ok:
            print(f"{count} host(s): failed: " + "; ".join(f"{r.host} {r.task}: {r.msg}" for r in first.results if r.failed))
            return 1
        before = {h.name: ssh(h, f"docker inspect --format '{{{{.State.StartedAt}}}}' tritonops-{name}") for h in chosen}
        started = time.perf_counter()
        again = deploy(inputs(), options)
        noop = time.perf_counter() - started
        if not again.ok:
            print(f"{count} host(s): the no-op deploy failed: " + "; ".join(
                f"{r.host} {r.task}: {r.msg}" for r in again.results if r.failed))
            return 1
        after = {h.name: ssh(h, f"docker inspect --format '{{{{.State.StartedAt}}}}' tritonops-{name}") for h in chosen}
        restarts = sum(before[n] != after[n] for n in before)
        changed = sum(r.status == "changed" for r in again.results)
        gates = [r.elapsed_s for r in first.results
                 if isinstance(r.payload, TaskOutcome) and r.payload.operation == "serve_release"]
        if len(gates) != count:
            print(f"{count} host(s): {len(gates)} serve results in the first deploy")
            return 1
        read = [x for x in lags if x is not None]
        lag = max(read, default=float("nan"))
        rows.append((count, seconds, max(gates), lag, f"{len(read)}/{count}", noop, restarts, changed,
                     BytesMoved.of(again)))
        for h in chosen:
            ssh(h, f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={name}) >/dev/null 2>&1; "
                   f"rm -rf /opt/tritonops/{shlex.quote(name)}", prints=False)
    single = rows[0][1]
    print(f"{'hosts':>5} {'deploy s':>9} {'x one host':>10} {'serve+gate s':>12} {'ready->gate s':>13} "
          f"{'(hosts read)':>12} {'no-op s':>8} {'restarts':>8} {'changed':>7} {'moved B':>7}")
    for count, seconds, gate, lag, covered, noop, restarts, changed, moved in rows:
        print(f"{count:>5} {seconds:>9.2f} {seconds / single:>10.2f} {gate:>12.2f} {lag:>13.2f} {covered:>12} "
              f"{noop:>8.2f} {restarts:>8} {changed:>7} {moved.total:>7}")
    return verdict(fleet_goals(rows))


if __name__ == "__main__":
    sys.exit(main())
