#!/usr/bin/env python3
"""Streaming load through the front door while the fleet changes under it (issues #31, #41).

    python bench/rolling_under_load.py -i inventory/lab.yml [-i ...] [--clients 8] [--tokens 32] [--quiet-s 20]
        [-e tritonops_max_num_seqs=200] [--limit PATTERN | --kill-replica HOST[:INDEX]] [--no-fewer]

Three scenarios, each `--quiet-s` seconds of load before, the change ("during"), `--quiet-s` seconds after:
- a full deploy (the default): `tritonops deploy -i ... -e ...`; the extra variable makes a new release, so every
  replica restarts, drained first on the balancers;
- `--limit PATTERN`: `tritonops deploy --limit PATTERN -i ... -e ...`: the hosts the pattern selects roll;
- `--kill-replica HOST[:INDEX]`: no deploy; replica INDEX (default 0) of HOST has its Triton process killed
  (kill -9 of its container's main process, a crash: Docker's restart policy brings it back); "during" lasts
  until the door has seen it DOWN and UP again (at most --recover-s).

The clients (half generate, half generate_stream, HTTP, the key from the balancer's keys file) call every balancer's
door at its `lab_door_address` (a lab balancer) or its `ansible_host`; only private and loopback addresses are
called, each phase bounded in time and count. Every request is counted: an answer that never began (an error
status, a refused or reset connection) is a failure; a stream that began and did not end whole
(`http.client.IncompleteRead`, a reset, an error event) is a cut stream; whatever else a client thread raised is
reported too. Printed per phase: requests, ok, failed, cut, latency p50 / p99 (ms) of the whole answers.

The goal, and the exit status (0 met, 1 missed):
- a deploy: 0 failed, 0 cut, p99 during <= 2 x p99 before, the deploy exits 0, and each serving host the deploy
  selects (every one, or those --limit selects) has a new current release while the others keep theirs; with
  --no-fewer also: every door keeps as many servers in service throughout the deploy as before it (sampled every
  0.5 s: Kamal's order on spare GPUs, issue #42);
- a killed replica: 0 failed (a request that had not begun to answer is sent to another replica: the door's
  retries), p99 during <= 2 x p99 before, the replica DOWN then UP again; the only losses allowed are streams that
  were flowing when it died (sent before the kill was done, ended after it began), reported as cut, none other.
"""

from __future__ import annotations

import argparse
import http.client
import ipaddress
import json
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

MAX_PER_CLIENT = 5000
PHASES = ("before", "during", "after")
P99_RATIO = 2.0


# --- what was measured, and the verdict: pure --------------------------------------------------------------------

@dataclass(frozen=True)
class Door:
    """One balancer's HTTP door."""

    address: str
    port: int
    key: str | None
    model: str = "vllm_model"


@dataclass(frozen=True)
class Answer:
    """One request through a door."""

    phase: str  # the phase it was sent in
    stream: bool  # generate_stream (else generate)
    began: bool  # a byte of a replica's answer came: its 200 header
    whole: bool  # it ended complete: the whole answer, every event, no error
    sent: float  # monotonic
    ended: float
    error: str | None = None  # what went wrong, as the client saw it

    @property
    def failed(self) -> bool:
        """Lost before it began to answer, or a plain generate lost at all (its answer is one piece)."""
        return not self.whole and (not self.began or not self.stream)

    @property
    def cut(self) -> bool:
        """A stream that began and did not end whole."""
        return not self.whole and self.began and self.stream

    @property
    def seconds(self) -> float:
        return self.ended - self.sent


@dataclass(frozen=True)
class PhaseFigures:
    requests: int
    ok: int
    failed: int
    cut: int
    p50_ms: float | None  # of the whole answers
    p99_ms: float | None


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def figures(answers: list[Answer]) -> dict[str, PhaseFigures]:
    """Each phase's counts and latencies."""
    found = {}
    for phase in PHASES:
        got = [a for a in answers if a.phase == phase]
        seconds = [a.seconds for a in got if a.whole]
        found[phase] = PhaseFigures(
            len(got), sum(a.whole for a in got), sum(a.failed for a in got), sum(a.cut for a in got),
            *(None if (p := percentile(seconds, q)) is None else p * 1000 for q in (50, 99)))
    return found


@dataclass(frozen=True)
class Deployed:
    """What the deploy of a scenario did: its exit status, and each serving host's current release before and
    after (None: none), the hosts it selected named."""

    argv: tuple[str, ...]
    exit_code: int
    seconds: float
    selected: frozenset[str]
    before: dict[str, str | None]
    after: dict[str, str | None]
    lines: tuple[str, ...] = ()  # its drain and door lines, shown


@dataclass(frozen=True)
class Killed:
    """A replica killed under the load: when (monotonic), and when the door saw it DOWN and UP again."""

    host: str
    index: int
    container: str
    pid: int
    killed: float
    kill_done: float
    down: float | None
    up: float | None
    restarts: tuple[int, int]  # Docker's restart count before, after


def release_problems(d: Deployed) -> list[str]:
    """A selected host without a new current release; a host left out whose release changed anyway."""
    problems = []
    for host in sorted(d.before.keys() | d.after.keys()):
        before, after = d.before.get(host), d.after.get(host)
        if host in d.selected and (after is None or after == before):
            problems.append(f"{host}: no new release (current {after or 'none'}, before {before or 'none'})")
        elif host not in d.selected and after != before:
            problems.append(f"{host}: not selected, yet its current release changed ({before} -> {after})")
    return problems


def verdict(answers: list[Answer], change: Deployed | Killed, client_errors: list[str] = ()) -> list[str]:
    """Why the run missed its goal (empty: it met it), for a deploy or a killed replica (see the module's words)."""
    why = [f"a client thread raised: {error}" for error in client_errors]
    counted = figures(answers)
    failed = [a for a in answers if a.failed]
    if failed:
        why.append(f"{len(failed)} request(s) failed: {_shown(failed)}")
    cut = [a for a in answers if a.cut]
    if isinstance(change, Killed):
        flowing = [a for a in cut if a.sent < change.kill_done and a.ended > change.killed]
        if len(flowing) < len(cut):
            why.append(f"{len(cut) - len(flowing)} stream(s) cut that were not flowing when the replica died: "
                       f"{_shown([a for a in cut if a not in flowing])}")
        if change.down is None:
            why.append(f"the door never saw {change.host} replica {change.index} DOWN")
        elif change.up is None:
            why.append(f"{change.host} replica {change.index} was not UP again at the door")
    else:
        if cut:
            why.append(f"{len(cut)} stream(s) cut: {_shown(cut)}")
        if change.exit_code != 0:
            why.append(f"the deploy exited {change.exit_code}")
        why += release_problems(change)
    before, during = counted["before"].p99_ms, counted["during"].p99_ms
    if before is None or during is None:
        why.append("no whole answer before or during: no p99 to compare")
    elif during > P99_RATIO * before:
        why.append(f"p99 during {during:.0f} ms > {P99_RATIO:g} x p99 before {before:.0f} ms")
    return why


def in_service(rows) -> dict[str, int]:
    """Each balancer's door servers in service in a `show stat` sample (HTTP doors' servers UP, not down, draining
    or in maintenance), by balancer: rows are (balancer, StatRow)."""
    from tritonops.render.door_config import door_of_proxy

    counted: dict[str, int] = {}
    for balancer, row in rows:
        counted.setdefault(balancer, 0)
        if row.kind == "server" and (door_of_proxy(row.backend) or ("", ""))[1] == "http" \
                and row.status.split(" ")[0] == "UP":  # "UP 1/3": a check failed, still in service
            counted[balancer] += 1
    return counted


def fewer_in_service(samples: list[tuple[float, dict[str, int]]], before: dict[str, int]) -> list[str]:
    """Each balancer whose door had fewer servers in service during the change than before it: the lowest count
    and when (seconds into the change)."""
    if not samples:
        return ["the door was never sampled during the change"]
    start = samples[0][0]
    why = []
    for balancer, count in sorted(before.items()):
        low_at, low = min(((at, sample.get(balancer, 0)) for at, sample in samples), key=lambda pair: pair[1])
        if low < count:
            why.append(f"{balancer}: {low} of {count} door server(s) in service {low_at - start:.1f} s into the change")
    return why


def exit_status(missed: list[str]) -> int:
    """0: the goal met; 1: missed."""
    return 1 if missed else 0


def _shown(answers: list[Answer], most: int = 5) -> str:
    listed = "; ".join(f"{'stream' if a.stream else 'generate'} sent in {a.phase}: {a.error}" for a in answers[:most])
    return listed + (f"; and {len(answers) - most} more" if len(answers) > most else "")


def table(counted: dict[str, PhaseFigures]) -> list[str]:
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}"

    lines = [f"{'phase':8} {'requests':>8} {'ok':>6} {'failed':>7} {'cut':>5} {'p50 ms':>8} {'p99 ms':>8}"]
    for phase, f in counted.items():
        lines.append(f"{phase:8} {f.requests:>8} {f.ok:>6} {f.failed:>7} {f.cut:>5} {ms(f.p50_ms):>8} "
                     f"{ms(f.p99_ms):>8}")
    return lines


# --- the load ----------------------------------------------------------------------------------------------------

def one(door: Door, stream: bool, tokens: int, phase: str) -> Answer:
    """One request, read to its end; every exception is the answer's error."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {door.key}"} if door.key else {})}
    path = f"/v2/models/{door.model}/generate_stream" if stream else f"/v2/models/{door.model}/generate"
    body = json.dumps({"text_input": "hi", "parameters": {"max_tokens": tokens, **({"stream": True} if stream else {})}})
    began = False
    sent = time.monotonic()
    connection = http.client.HTTPConnection(door.address, door.port, timeout=120)
    try:
        connection.request("POST", path, body=body.encode(), headers=headers)
        reply = connection.getresponse()
        if reply.status != 200:
            return Answer(phase, stream, False, False, sent, time.monotonic(),
                          f"HTTP {reply.status}: {reply.read()[:120]!r}")
        began = True
        if stream:
            events = [line for line in reply.read().splitlines() if line.startswith(b"data:")]
            error = "no event" if not events else next((e[:120].decode() for e in events if b'"error"' in e), None)
        else:
            error = None if json.loads(reply.read()).get("text_output") else "no text_output"
        return Answer(phase, stream, True, error is None, sent, time.monotonic(), error)
    except Exception as err:  # noqa: BLE001 - IncompleteRead, a reset, a timeout, bad JSON: each is counted
        return Answer(phase, stream, began, False, sent, time.monotonic(), f"{type(err).__name__}: {err}"[:200])
    finally:
        connection.close()


def run_load(doors: list[Door], clients: int, tokens: int, quiet_s: float, change: Callable[[], object],
             max_per_client: int = MAX_PER_CLIENT) -> tuple[list[Answer], object, list[str]]:
    """`clients` threads (even: generate_stream, odd: generate) over the doors: `quiet_s` before, `change()`,
    `quiet_s` after; every answer, the change's value, and what any client thread raised (its future read)."""
    phase = ["before"]
    answers: list[Answer] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(index: int) -> None:
        door = doors[index % len(doors)]
        for _ in range(max_per_client):
            if stop.is_set():
                return
            got = one(door, index % 2 == 0, tokens, phase[0])
            with lock:
                answers.append(got)

    with ThreadPoolExecutor(clients) as pool:
        running = [pool.submit(client, index) for index in range(clients)]
        try:
            time.sleep(quiet_s)
            phase[0] = "during"
            value = change()
            phase[0] = "after"
            time.sleep(quiet_s)
        finally:
            stop.set()
        raised = [f"client {index}: {type(e).__name__}: {e}" for index, future in enumerate(running)
                  if (e := future.exception()) is not None]
    return answers, value, raised


# --- the fleet: doors, releases, a deploy, a kill (I/O) -----------------------------------------------------------

def doors(inventory) -> list[Door]:
    """Every balancer's HTTP door."""
    from tritonops.lab.door import door_key
    from tritonops.planning.door import balancers_among, door
    from tritonops.transport.sessions import SessionPool

    found = []
    balancers = balancers_among(inventory.hosts)
    with SessionPool([host.connection for host in balancers]) as pool:
        for host in balancers:
            settings = door(host)
            address = str(host.vars.get("lab_door_address") or host.connection.host)
            ip = ipaddress.ip_address(address)
            if not (ip.is_private or ip.is_loopback):
                raise SystemExit(f"{host.name}: {address} is not a lab or loopback address: load goes only there")
            found.append(Door(address, settings.http_port, door_key(pool.session(host.name).transport,
                                                                    settings.keys_file)))
    if not found:
        raise SystemExit("no host in tritonops_balancers: nothing to load")
    return found


def show_stat_rows(pool, balancers) -> list:
    """`show stat`'s rows on every balancer, through its runtime program over the balancer's session."""
    from tritonops.door.runtime import parse_stat, show_stat
    from tritonops.door.runtime_program import read_send, send_argv

    rows = []
    for b in balancers:
        out = pool.session(b.name).transport.run(shlex.join(send_argv([show_stat()])), timeout=30)
        rows += parse_stat(read_send(out.exit_code, out.stdout, out.stderr)[0].text)
    return rows


def door_redispatches(paths: list[str]) -> dict[str, tuple[str, int]]:
    """Each balancer's (HAProxy worker's pid, requests its doors' HTTP backends sent to another replica after one
    lost them): `show stat`'s wredis, counted since that worker started (a reload starts a new one)."""
    import csv

    from tritonops.door.runtime_program import read_send, send_argv
    from tritonops.inventory import load_inventory
    from tritonops.planning.door import balancers_among
    from tritonops.render.door_config import door_of_proxy
    from tritonops.transport.sessions import SessionPool

    balancers = balancers_among(load_inventory(paths).hosts)
    found = {}
    with SessionPool([b.connection for b in balancers]) as pool:
        for b in balancers:
            out = pool.session(b.name).transport.run(shlex.join(send_argv(["show info", "show stat"])), timeout=30)
            info, stat = (answer.text for answer in read_send(out.exit_code, out.stdout, out.stderr))
            pid = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("Pid:")), "")
            lines = [line for line in stat.splitlines() if line]
            found[b.name] = (pid, sum(int(row["wredis"] or 0) for row in csv.DictReader([lines[0][2:]] + lines[1:])
                                      if row["svname"] == "BACKEND"
                                      and (door_of_proxy(row["pxname"]) or ("", ""))[1] == "http"))
    return found


def redispatched(before: dict[str, tuple[str, int]], after: dict[str, tuple[str, int]]) -> tuple[int, bool]:
    """(requests sent to another replica over the run, whether a balancer reloaded meanwhile: then only what its
    new worker counted)."""
    total, reloaded = 0, False
    for name, (pid, count) in after.items():
        was = before.get(name)
        if was is not None and was[0] == pid:
            total += count - was[1]
        else:
            total, reloaded = total + count, True
    return total, reloaded


class DoorSampler:
    """Every balancer's `show stat`, every `interval_s` while running, over one session each: the door servers in
    service at each moment (`in_service`)."""

    def __init__(self, paths: list[str], interval_s: float = 0.5):
        from tritonops.inventory import load_inventory
        from tritonops.planning.door import balancers_among
        from tritonops.transport.sessions import SessionPool

        self.balancers = balancers_among(load_inventory(paths).hosts)
        self.pool = SessionPool([b.connection for b in self.balancers])
        self.interval_s = interval_s
        self.samples: list[tuple[float, dict[str, int]]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> dict[str, int]:
        from tritonops.door.runtime import parse_stat, show_stat
        from tritonops.door.runtime_program import read_send, send_argv

        rows = []
        for b in self.balancers:
            out = self.pool.session(b.name).transport.run(shlex.join(send_argv([show_stat()])), timeout=30)
            rows += [(b.name, row) for row in parse_stat(read_send(out.exit_code, out.stdout, out.stderr)[0].text)]
        return in_service(rows)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.monotonic(), self.sample()))
            except Exception as err:  # noqa: BLE001 -- every failure to sample is reported, none stops the load
                self.errors.append(f"{type(err).__name__}: {err}")
            self._stop.wait(self.interval_s)

    def __enter__(self) -> "DoorSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=60)
        self.pool.close()


def current_releases(paths: list[str]) -> dict[str, str | None]:
    """Each serving host's current release, by `tritonops releases --json`."""
    argv = [sys.executable, "-m", "tritonops", "releases", "--json"] + [f"-i{path}" for path in paths]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    report = json.loads(done.stdout)
    return {r["host"]: (r.get("payload") or {}).get("current") for r in report["results"]}


def deploy(paths: list[str], extra_vars: list[str], limit: str | None) -> Deployed:
    from tritonops.inventory import load_inventory
    from tritonops.planning.door import serving_hosts

    inventory = load_inventory(paths)
    selected = frozenset(h.name for h in serving_hosts(inventory.select(limit) if limit else inventory.hosts))
    argv = [sys.executable, "-m", "tritonops", "deploy"] + (["--limit", limit] if limit else []) + \
        [f"-i{path}" for path in paths] + [f"-e{value}" for value in extra_vars]
    before = current_releases(paths)
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    took = time.monotonic() - started
    lines = tuple("  " + line.strip()[:300] for line in (done.stderr + done.stdout).splitlines()
                  if line.startswith(("drain", "door", "failed", "unreachable")))  # the task lines are on stderr
    return Deployed(tuple(argv[1:]), done.returncode, took, selected, before, current_releases(paths), lines)


def kill_replica(paths: list[str], target: str, recover_s: float) -> Killed:
    """Kill -9 the Triton process of replica `target` ("HOST[:INDEX]"), then watch every balancer's `show stat`
    until its HTTP server there is DOWN, then UP again (at most recover_s)."""
    from tritonops.inventory import load_inventory
    from tritonops.planning.door import balancers_among, server_name
    from tritonops.planning.deployment import deployment_of
    from tritonops.render.door_config import http_backend
    from tritonops.transport.sessions import SessionPool
    from tritonops.values.containers import replica_container

    name, _, index_text = target.partition(":")
    index = int(index_text or 0)
    inventory = load_inventory(paths)
    hosts = {h.name: h for h in inventory.hosts}
    if name not in hosts:
        raise SystemExit(f"--kill-replica: no host {name!r} in the inventory")
    _, deployment = deployment_of(hosts[name])
    container = replica_container(deployment, index)
    server = f"{http_backend(deployment)}/{server_name(name, index)}"
    balancers = balancers_among(inventory.hosts)
    with SessionPool([hosts[name].connection] + [b.connection for b in balancers]) as pool:
        host = pool.session(name).transport

        def inspect(what: str) -> str:
            out = host.run(f"docker inspect --format '{{{{{what}}}}}' {shlex.quote(container)}", timeout=30)
            if not out.ok:
                raise SystemExit(f"{name}: no container {container}: {out.stderr.strip()[:200]}")
            return out.stdout.strip()

        def states() -> set[str]:
            return {row.state for row in show_stat_rows(pool, balancers) if f"{row.backend}/{row.server}" == server}

        pid, restarts = int(inspect(".State.Pid")), int(inspect(".RestartCount"))
        if states() != {"UP"}:
            raise SystemExit(f"{server} is not UP at the door before the kill: {states()}")
        killed = time.monotonic()
        out = host.run(f"kill -9 {pid}", timeout=30)
        kill_done = time.monotonic()
        if not out.ok:
            raise SystemExit(f"{name}: kill -9 {pid} failed: {out.stderr.strip()[:200]}")
        down = up = None
        deadline = killed + recover_s
        while time.monotonic() < deadline and up is None:
            seen = states()
            if down is None and "DOWN" in seen:
                down = time.monotonic()
            elif down is not None and seen == {"UP"}:
                up = time.monotonic()
            time.sleep(0.2)
        return Killed(name, index, container, pid, killed, kill_done, down, up,
                      (restarts, int(inspect(".RestartCount"))))


def describe(change: Deployed | Killed) -> list[str]:
    if isinstance(change, Killed):
        def at(moment: float | None) -> str:
            return "never" if moment is None else f"{moment - change.killed:.1f} s"
        return [f"killed {change.container} on {change.host} (replica {change.index}, pid {change.pid}, "
                f"{change.kill_done - change.killed:.2f} s over SSH): DOWN at the door after {at(change.down)}, "
                f"UP again after {at(change.up)}; Docker restarts {change.restarts[0]} -> {change.restarts[1]}"]
    return [f"deploy exit {change.exit_code} in {change.seconds:.1f} s: {shlex.join(change.argv)}", *change.lines,
            *(f"  {host}: {change.before.get(host)} -> {change.after.get(host)}"
              f"{'' if host in change.selected else ' (not selected)'}" for host in sorted(change.after))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--inventory", action="append", required=True)
    parser.add_argument("-e", "--extra-vars", action="append", default=[])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--quiet-s", type=float, default=20.0)
    scenario = parser.add_mutually_exclusive_group()
    scenario.add_argument("--limit", metavar="PATTERN", help="deploy only the hosts the pattern selects")
    scenario.add_argument("--kill-replica", metavar="HOST[:INDEX]", help="kill a replica's Triton, no deploy")
    parser.add_argument("--recover-s", type=float, default=180.0, help="longest wait for a killed replica's return")
    parser.add_argument("--no-fewer", action="store_true",
                        help="a deploy's goal includes: no door ever has fewer servers in service than before it "
                             "(Kamal's order on spare GPUs, issue #42)")
    args = parser.parse_args()
    from tritonops.inventory import load_inventory

    found = doors(load_inventory(args.inventory))
    if args.kill_replica:
        name = f"kill-replica {args.kill_replica}"
        change = lambda: kill_replica(args.inventory, args.kill_replica, args.recover_s)  # noqa: E731
    else:
        name = f"deploy --limit {args.limit}" if args.limit else "deploy"
        change = lambda: deploy(args.inventory, args.extra_vars, args.limit)  # noqa: E731
    counted_before = door_redispatches(args.inventory)
    sampler = DoorSampler(args.inventory)
    before = sampler.sample()

    def sampled():
        with sampler:
            return change()

    answers, done, raised = run_load(found, args.clients, args.tokens, args.quiet_s, sampled)
    retried, reloaded = redispatched(counted_before, door_redispatches(args.inventory))
    print(f"scenario: {name}; {args.clients} clients, {args.tokens} tokens, {len(found)} door(s)")
    print("\n".join(describe(done)))
    print("\n".join(table(figures(answers))))
    print(f"the doors sent {retried} request(s) to another replica after one lost them before answering"
          f"{' (since HAProxy reloaded during the run)' if reloaded else ''}")
    fewer = fewer_in_service(sampler.samples, before)
    lowest = {b: min((s.get(b, 0) for _, s in sampler.samples), default=0) for b in before}
    print(f"door servers in service: {', '.join(f'{b} {before[b]} before, at least {lowest[b]} during' for b in before)}"
          f" ({len(sampler.samples)} samples every {sampler.interval_s:g} s; {len(sampler.errors)} failed"
          f"{': ' + sampler.errors[0] if sampler.errors else ''})")
    missed = verdict(answers, done, raised)
    if args.no_fewer and not args.kill_replica:
        missed += fewer + [f"sampling the door failed: {error}" for error in sampler.errors[:3]]
    print("goal met" if not missed else "goal missed:\n" + "\n".join(f"  {why}" for why in missed))
    return exit_status(missed)


if __name__ == "__main__":
    sys.exit(main())
