#!/usr/bin/env python3
"""Aggregate output tokens/s through the front door with 1, 2, 4 and 8 replicas (issue #31).

    python bench/scaling.py -i inventory/lab.yml [--host node-h200x8] [--replicas 1,2,4,8] [--seqs 2]
        [--tokens 100] [--seconds 20]

For each count N: `tritonops deploy --limit HOST,<the balancers> -e tritonops_replicas=N` (TP 1, the engines'
max_num_seqs `--seqs`, which is HAProxy's maxconn per replica), then, once HAProxy's `show stat` has every one of
the N servers UP, N x `--seqs` clients send generate requests of `--tokens` tokens (ignore_eos) through the door
back to back for `--seconds`: the tokens of every completed request over the time from the first sent to the last
answered. One replica's rate is measured the same way straight to it (its address and port as HAProxy has it), at
`--seqs` clients, with one replica deployed. The lab's engine generates each request's tokens at a fixed pace
(TRITONOPS_LAB_TOKENS_PER_S, 200 by default) and runs `max_num_seqs` requests at once, so one replica's rate is
fixed: N replicas should give N times it. Goal: >= 0.95 x N. Printed: a table per N, then each goal met or MISSED;
exits 1 when one missed.

Only private and loopback addresses are called; every phase is bounded in count and time. On the lab
(`tritonops lab up --balancers 1`) every replica is a real Triton on this machine's cores, which bounds N.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import shlex
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from goals import Goal, verdict

GOAL_RATIO = 0.95   # N replicas through the door against N x one replica straight
MAX_CLIENTS = 128
MAX_SECONDS = 120
UP_WAIT_S = 120


def private(address: str) -> str:
    ip = ipaddress.ip_address(address)
    if not (ip.is_private or ip.is_loopback):
        raise SystemExit(f"{address} is not a lab or loopback address: load goes only there")
    return address


def generate(url: str, key: str | None, tokens: int) -> tuple[bool, float, str]:
    """(a whole answer of `tokens` tokens, seconds, what went wrong) of one request."""
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    body = json.dumps({"text_input": "hi", "exclude_input_in_output": True,
                       "parameters": {"max_tokens": tokens, "ignore_eos": True}}).encode()
    started = time.monotonic()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=120) as reply:
            text = json.loads(reply.read()).get("text_output", "")
        whole = len(text.split()) == tokens
        return whole, time.monotonic() - started, "" if whole else f"{len(text.split())} tokens"
    except urllib.error.HTTPError as err:
        return False, time.monotonic() - started, f"{err.code} {err.read()[:80]!r}"
    except (urllib.error.URLError, OSError, ValueError) as err:
        return False, time.monotonic() - started, type(err).__name__


def load(url: str, key: str | None, clients: int, tokens: int, seconds: float) -> dict:
    """`clients` clients back to back for `seconds`: tokens/s over first sent .. last answered, failures, p50."""
    done: list[tuple[bool, float, str]] = []
    lock = threading.Lock()
    started = time.monotonic()

    def client(_):
        while time.monotonic() - started < seconds:
            answer = generate(url, key, tokens)
            with lock:
                done.append(answer)

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    took = time.monotonic() - started
    ok = [s for whole, s, _ in done if whole]
    ordered = sorted(ok)
    why: dict[str, int] = {}
    for whole, _, wrong in done:
        if not whole:
            why[wrong] = why.get(wrong, 0) + 1
    return {"tokens_s": len(ok) * tokens / took, "ok": len(ok), "failed": len(done) - len(ok),
            "p50_ms": ordered[len(ordered) // 2] * 1000 if ordered else float("nan"), "why": why}


def main() -> int:
    from tritonops.door.runtime import parse_stat, show_stat
    from tritonops.door.runtime_program import read_send, send_argv
    from tritonops.inventory import load_inventory
    from tritonops.lab.door import door_key
    from tritonops.planning.door import balancers_among, door
    from tritonops.planning.deployment import deployment_of
    from tritonops.render.door_config import http_backend
    from tritonops.transport.sessions import SessionPool

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--inventory", action="append", required=True)
    parser.add_argument("--host", default="node-h200x8", help="the host of the replicas (one GPU each)")
    parser.add_argument("--replicas", default="1,2,4,8")
    parser.add_argument("--seqs", type=int, default=2, help="max_num_seqs of each engine (HAProxy's maxconn)")
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--model", default="vllm_model")
    args = parser.parse_args()
    counts = [int(c) for c in args.replicas.split(",")]
    if max(counts) * args.seqs > MAX_CLIENTS or not 0 < args.seconds <= MAX_SECONDS:
        raise SystemExit(f"at most {MAX_CLIENTS} clients and {MAX_SECONDS} s a phase")

    hosts = {host.name: host for host in load_inventory(args.inventory).hosts}
    if args.host not in hosts:
        raise SystemExit(f"no host {args.host} in the inventory")
    balancers = balancers_among(hosts.values())
    if not balancers:
        raise SystemExit("the inventory needs a host in tritonops_balancers")
    balancer = balancers[0]
    settings, deployment = door(balancer), deployment_of(hosts[args.host])[1]
    address = private(str(balancer.vars.get("lab_door_address") or balancer.connection.host))
    door_url = f"http://{address}:{settings.http_port}/v2/models/{args.model}/generate"
    backend = http_backend(deployment)
    limit = ",".join([args.host] + [b.name for b in balancers])

    with SessionPool([balancer.connection]) as pool:
        transport = pool.session(balancer.name).transport

        def servers() -> list:
            result = transport.run(shlex.join(send_argv([show_stat(backend)])), timeout=30)
            rows = parse_stat(read_send(result.exit_code, result.stdout, result.stderr)[0].text)
            return [row for row in rows if row.kind == "server"]

        rows, one = [], None
        for count in counts:
            deploy = [sys.executable, "-m", "tritonops", "deploy", *[f"-i{path}" for path in args.inventory],
                      "--limit", limit, "-e", f"tritonops_replicas={count}", "-e", "tritonops_tensor_parallel_size=1",
                      "-e", f"tritonops_max_num_seqs={args.seqs}"]
            started = time.monotonic()
            done = subprocess.run(deploy, capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
                raise SystemExit(f"deploy of {count} replica(s) exited {done.returncode}")
            deadline = time.monotonic() + UP_WAIT_S
            while True:
                up = [row for row in servers() if row.state == "UP"]
                if len(up) == count and len(servers()) == count:
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"{len(up)} of {count} replicas UP in {backend} after {UP_WAIT_S} s")
                time.sleep(1)
            key = door_key(transport, settings.keys_file)  # made by the first deploy behind the door
            print(f"{count} replica(s) deployed and UP in {time.monotonic() - started:.0f} s", flush=True)
            if one is None:
                replica = up[0].address or ""
                host, port = replica.rsplit(":", 1)
                one = load(f"http://{private(host)}:{port}/v2/models/{args.model}/generate", None, args.seqs,
                           args.tokens, args.seconds)
                print(f"one replica straight: {one['tokens_s']:.0f} tokens/s ({args.seqs} clients, "
                      f"{one['ok']} ok, {one['failed']} failed)", flush=True)
            through = load(door_url, key, count * args.seqs, args.tokens, args.seconds)
            rows.append((count, through))
            print(f"{count} replica(s) through the door: {through['tokens_s']:.0f} tokens/s"
                  + (f"; failed: {through['why']}" if through["why"] else ""), flush=True)

    print(f"\n{args.seqs} requests at once per replica, {args.tokens} tokens each, {args.seconds:g} s per count; "
          f"one replica straight: {one['tokens_s']:.0f} tokens/s")
    print(f"{'replicas':>8} {'clients':>7} {'tokens/s':>9} {'N x one':>8} {'ratio':>6} {'ok':>6} {'failed':>6} "
          f"{'p50 ms':>7}")
    for count, got in rows:
        ideal = count * one["tokens_s"]
        print(f"{count:>8} {count * args.seqs:>7} {got['tokens_s']:>9.0f} {ideal:>8.0f} "
              f"{got['tokens_s'] / ideal:>6.3f} {got['ok']:>6} {got['failed']:>6} {got['p50_ms']:>7.0f}")
    return verdict(goals(one["tokens_s"], [(count, got["tokens_s"]) for count, got in rows]))


def goals(one_tokens_s: float, rows: list[tuple[int, float]]) -> list[Goal]:
    """Each count N's tokens/s through the door at least 0.95 x N x one replica's straight."""
    return [Goal(f"{count} replica(s): tokens/s / (N x one replica's)",
                 round(tokens_s / (count * one_tokens_s), 3) if one_tokens_s else None, GOAL_RATIO, at_most=False)
            for count, tokens_s in rows]


if __name__ == "__main__":
    sys.exit(main())
