#!/usr/bin/env python3
"""The front door's own cost and its circuit breaker, measured through a balancer (issue #31).

    python bench/overload.py -i inventory/lab.yml [-e VAR=VALUE ...] [--requests 300] [--tokens 400] [--factor 2]
        [--max-threads 200]

1. Added latency at low load: `--requests` generate requests of one token, one at a time, straight to a replica
   (its address and port as HAProxy has it) and through the door, alternating: p50 / p99 of each and the difference
   (goal: the door adds <= 1 ms at p50).
2. Overload: `--factor` x (the replicas' maxconn together + the door's max_queue) requests of `--tokens` tokens sent
   at once (at most `--max-threads`): how many were served, and how many got each 503 reason; the 503s' latency
   p50 / p99 from the client and at the balancer itself (goal: p99 <= 50 ms at the balancer): HAProxy's own
   timers for each of those requests, from the doors' request log (a ring on the balancer read with `show events`,
   balancer/request_log.py: Ta, received to answered, and Tw, the time queued), and the door's queue time as
   HAProxy reports it (`show stat`: qtime, the average of the last 1,024 queued requests, and qmax) against
   `tritonops_queue_timeout_ms`.
Ends with each goal met or MISSED; exits 1 when one missed (or could not be measured: no request refused at once).

The balancer's capacity is read from its own `show stat` (HAProxy's runtime API over SSH). Only private and loopback
addresses are called; every phase is bounded in count and time. Deploy with small engines first to keep the
overload small, e.g. `tritonops deploy -i inventory/lab.yml -e tritonops_max_num_seqs=4 -e tritonops_max_queue=8`.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import shlex
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from goals import Goal, verdict

MAX_REQUESTS = 2000
GOAL_ADDED_P50_MS = 1.0      # the door's added latency at low load, p50
GOAL_REFUSED_P99_MS = 50.0   # a request refused at once (503), p99 at the balancer (HAProxy's Ta)


def pct(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] * 1000:.1f}"


def quantile_ms(values: list[float], q: float) -> float | None:
    """The q-th percentile of `values` (seconds) in ms, as pct() shows it; None when there are none."""
    return float(pct(values, q)) if values else None


def goals(added_p50_ms: float | None, refused_p99_ms: float | None) -> list[Goal]:
    """The door adds at most 1 ms at p50; a request refused at once is answered within 50 ms at p99 at the balancer."""
    return [Goal("the door's added latency at p50", added_p50_ms, GOAL_ADDED_P50_MS, unit="ms"),
            Goal("refused at once, Ta p99 at the balancer", refused_p99_ms, GOAL_REFUSED_P99_MS, unit="ms")]


def private(address: str) -> str:
    ip = ipaddress.ip_address(address)
    if not (ip.is_private or ip.is_loopback):
        raise SystemExit(f"{address} is not a lab or loopback address: load goes only there")
    return address


def call(url: str, key: str | None, tokens: int) -> tuple[int, str | None, float]:
    """(status, the 503's reason, seconds) of one generate request."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    body = json.dumps({"text_input": "hi", "parameters": {"max_tokens": tokens, "ignore_eos": True}}).encode()
    started = time.monotonic()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=300) as reply:
            reply.read()
            return reply.status, None, time.monotonic() - started
    except urllib.error.HTTPError as err:
        try:
            reason = json.loads(err.read() or b"{}").get("reason")
        except ValueError:
            reason = None
        return err.code, reason, time.monotonic() - started
    except (urllib.error.URLError, OSError):
        return 0, "connection", time.monotonic() - started


def main() -> int:
    from tritonops.door.request_log import parse_request_log, show_events
    from tritonops.door.runtime import parse_stat, show_stat
    from tritonops.door.runtime_program import read_send, send_argv
    from tritonops.inventory import load_inventory
    from tritonops.lab.door import door_key
    from tritonops.planning.door import balancers_among, door, serving_hosts
    from tritonops.planning.deployment import deployment_of
    from tritonops.render.door_config import http_backend
    from tritonops.transport.sessions import SessionPool

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--inventory", action="append", required=True)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--factor", type=float, default=2.0)
    parser.add_argument("--max-threads", type=int, default=200)
    parser.add_argument("-e", "--extra-vars", action="append", default=[], help="as given to the deploy")
    args = parser.parse_args()
    from tritonops.playbook import parse_extra_vars

    hosts = load_inventory(args.inventory, extra_vars=parse_extra_vars(args.extra_vars)).hosts
    balancer = next(iter(balancers_among(hosts)), None)
    serving = next(iter(serving_hosts(hosts)), None)
    if balancer is None or serving is None:
        raise SystemExit("the inventory needs a host in tritonops_balancers and one that serves")
    settings, deployment = door(balancer), deployment_of(serving)[1]
    address = private(str(balancer.vars.get("lab_door_address") or balancer.connection.host))
    backend = http_backend(deployment)
    with SessionPool([balancer.connection]) as pool:
        transport = pool.session(balancer.name).transport

        def stat() -> tuple:
            result = transport.run(shlex.join(send_argv([show_stat(backend)])), timeout=30)
            return parse_stat(read_send(result.exit_code, result.stdout, result.stderr)[0].text)

        def logged() -> tuple:
            result = transport.run(shlex.join(send_argv([show_events()])), timeout=60)
            return parse_request_log(read_send(result.exit_code, result.stdout, result.stderr)[0].text)

        key = door_key(transport, settings.keys_file)
        servers = [row for row in stat() if row.kind == "server" and row.state == "UP"]
        if not servers:
            raise SystemExit(f"no replica UP in {backend} on {balancer.name}")
        capacity = sum(row.slim or 0 for row in servers)
        door_url = f"http://{address}:{settings.http_port}/v2/models/vllm_model/generate"
        replica = servers[0].address or ""
        replica_url = f"http://{private(replica.rsplit(':', 1)[0])}:{replica.rsplit(':', 1)[1]}/v2/models/vllm_model/generate"

        # 1. added latency, one request at a time, alternating
        direct, through = [], []
        for _ in range(min(args.requests, MAX_REQUESTS)):
            status, _, seconds = call(replica_url, None, 1)
            if status == 200:
                direct.append(seconds)
            status, _, seconds = call(door_url, key, 1)
            if status == 200:
                through.append(seconds)
        gap = (sorted(through)[len(through) // 2] - sorted(direct)[len(direct) // 2]) * 1000 if direct and through \
            else float("nan")
        print(f"added latency ({len(direct)} direct to {replica}, {len(through)} through the door, 1 token each): "
              f"direct p50 {pct(direct, 50)} / p99 {pct(direct, 99)} ms, door p50 {pct(through, 50)} / "
              f"p99 {pct(through, 99)} ms: the door adds {gap:.2f} ms at p50")

        # 2. overload
        count = min(int(args.factor * (capacity + settings.max_queue)), args.max_threads, MAX_REQUESTS)
        print(f"overload: {len(servers)} replicas, maxconn {capacity} in all, max_queue {settings.max_queue}, "
              f"queue timeout {settings.queue_timeout_ms} ms; {count} requests of {args.tokens} tokens at once")
        earlier = len(logged())  # the ring's lines so far: this phase's come after them
        with ThreadPoolExecutor(count) as threads:
            answers = list(threads.map(lambda _: call(door_url, key, args.tokens), range(count)))
        rows = {row.server: row for row in stat()}
        door_log = [r for r in logged()[earlier:] if r.frontend.startswith(f"tritonops_{deployment}_http_door")]
        by: dict[tuple, list[float]] = {}
        for status, reason, seconds in answers:
            by.setdefault((status, reason), []).append(seconds)
        for (status, reason), seconds in sorted(by.items(), key=lambda item: (item[0][0], str(item[0][1]))):
            print(f"  {status} {reason or '':14} {len(seconds):5}  p50 {pct(seconds, 50):>8} ms  "
                  f"p99 {pct(seconds, 99):>8} ms")
        fast = [s for (status, reason), seconds in by.items() if status == 503 and reason != "queue_timeout"
                for s in seconds]
        backend_row = rows.get("BACKEND")
        print(f"  refused at once (queue_full, no_replica): {len(fast)}, p50 {pct(fast, 50)} / p99 {pct(fast, 99)} ms "
              f"from the client ({count} client threads on this machine)")
        at_once = [r.active_ms / 1000 for r in door_log if r.status == 503 and r.server == "<NOSRV>"]
        timed_out = [r for r in door_log if r.status == 503 and r.termination.startswith("sQ")]
        queued = [r.queue_ms / 1000 for r in timed_out]
        served = [r.active_ms / 1000 for r in door_log if r.status == 200]
        print(f"  at the balancer (HAProxy's request log, {len(door_log)} of this phase's {count} requests): "
              f"refused at once {len(at_once)}, Ta p50 {pct(at_once, 50)} / p99 {pct(at_once, 99)} / "
              f"max {pct(at_once, 100)} ms (goal: p99 <= 50 ms); queue_timeout {len(timed_out)}, queued Tw p50 "
              f"{pct(queued, 50)} / max {pct(queued, 100)} ms; served {len(served)}, Ta p50 {pct(served, 50)} / "
              f"p99 {pct(served, 99)} ms")
        if backend_row is not None:
            print(f"  HAProxy {backend}: 5xx {backend_row.hrsp_5xx} since start")
        queue = transport.run(shlex.join(send_argv([f"show stat {backend} 2 -1"])), timeout=30)
        for line in read_send(queue.exit_code, queue.stdout, queue.stderr)[0].text.splitlines():
            if line.startswith("# "):
                header = line[2:].split(",")
            elif line.strip():
                values = dict(zip(header, line.split(",")))
                print(f"  HAProxy's queue time: qtime {values.get('qtime')} ms (average of the last 1,024 "
                      f"queued), qmax {values.get('qmax')}, against the timeout {settings.queue_timeout_ms} ms")
    return verdict(goals(gap if direct and through else None, quantile_ms(at_once, 99)))


if __name__ == "__main__":
    sys.exit(main())
