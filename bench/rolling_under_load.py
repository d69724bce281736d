#!/usr/bin/env python3
"""Streaming load through the front door while a changed release rolls across every replica (issue #31).

    python bench/rolling_under_load.py -i inventory/lab.yml [-i ...] [--clients 8] [--tokens 32] [--quiet-s 20]
        [-e tritonops_max_num_seqs=200]

Before: `--quiet-s` seconds of load on the fleet as it is. During: `tritonops deploy -i ... -e ...` (the extra
variable makes a new release, so every replica restarts, drained first on the balancers). After: `--quiet-s` more.
The clients (half generate, half generate_stream, HTTP, the key from the balancer's keys file) call every balancer's
door at its `lab_door_address` (a lab balancer) or its `ansible_host`; only private and loopback addresses are
called, each phase bounded in time and count. Printed per phase: requests ok / failed, streams cut, latency p50 /
p99 (ms); the goal is 0 failed and p99 during <= 2 x p99 before.
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

MAX_PER_CLIENT = 5000


def doors(inventory: list[str]) -> list[tuple[str, int, str | None, str]]:
    """(address, port, key, model) of every balancer's HTTP door."""
    from tritonops.inventory import load_inventory
    from tritonops.lab.door import door_key
    from tritonops.planning.balancer import balancers_among, door
    from tritonops.transport.sessions import SessionPool

    found = []
    balancers = balancers_among(load_inventory(inventory).hosts)
    with SessionPool([host.connection for host in balancers]) as pool:
        for host in balancers:
            settings = door(host)
            address = str(host.vars.get("lab_door_address") or host.connection.host)
            ip = ipaddress.ip_address(address)
            if not (ip.is_private or ip.is_loopback):
                raise SystemExit(f"{host.name}: {address} is not a lab or loopback address: load goes only there")
            found.append((address, settings.http_port, door_key(pool.session(host.name).transport, settings.keys_file),
                          "vllm_model"))
    if not found:
        raise SystemExit("no host in tritonops_balancers: nothing to load")
    return found


def one(door, stream: bool, tokens: int) -> tuple[bool, bool, float]:
    """(ok, cut, seconds) of one request."""
    address, port, key, model = door
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    path = f"/v2/models/{model}/generate_stream" if stream else f"/v2/models/{model}/generate"
    body = json.dumps({"text_input": "hi", "parameters": {"max_tokens": tokens, **({"stream": True} if stream else {})}})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(urllib.request.Request(f"http://{address}:{port}{path}", data=body.encode(),
                                                            headers=headers), timeout=120) as reply:
            if stream:
                events = [line for line in reply if line.startswith(b"data:")]
                cut = not events or any(b'"error"' in e for e in events)
                return not cut, cut, time.monotonic() - started
            ok = bool(json.loads(reply.read()).get("text_output"))
            return ok, False, time.monotonic() - started
    except (urllib.error.URLError, OSError, ValueError):
        return False, stream, time.monotonic() - started


def pct(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] * 1000:.0f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-i", "--inventory", action="append", required=True)
    parser.add_argument("-e", "--extra-vars", action="append", default=[])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--quiet-s", type=float, default=20.0)
    args = parser.parse_args()
    found = doors(args.inventory)
    phase = {"name": "before"}
    records: dict[str, list] = {"before": [], "during": [], "after": []}
    lock = threading.Lock()
    stop = threading.Event()

    def client(index: int) -> None:
        door = found[index % len(found)]
        for _ in range(MAX_PER_CLIENT):
            if stop.is_set():
                return
            name = phase["name"]
            result = one(door, stream=index % 2 == 0, tokens=args.tokens)
            with lock:
                records[name].append(result)

    deploy = [sys.executable, "-m", "tritonops", "deploy"] + [f"-i{path}" for path in args.inventory] + \
        [f"-e{value}" for value in args.extra_vars]
    with ThreadPoolExecutor(args.clients) as pool:
        for index in range(args.clients):
            pool.submit(client, index)
        time.sleep(args.quiet_s)
        phase["name"] = "during"
        started = time.monotonic()
        done = subprocess.run(deploy, capture_output=True, text=True, timeout=1800)
        took = time.monotonic() - started
        phase["name"] = "after"
        time.sleep(args.quiet_s)
        stop.set()
    print(f"deploy exit {done.returncode} in {took:.1f} s: {shlex.join(deploy[1:])}")
    for line in (done.stderr + done.stdout).splitlines():  # the task lines are on stderr
        if line.startswith(("drain", "door")):
            print("  " + line.strip()[:300])
    print(f"{'phase':8} {'ok':>6} {'failed':>7} {'cut':>5} {'p50 ms':>8} {'p99 ms':>8}")
    for name in ("before", "during", "after"):
        got = records[name]
        seconds = [s for ok, _, s in got if ok]
        print(f"{name:8} {sum(ok for ok, _, _ in got):>6} {sum(not ok for ok, _, _ in got):>7} "
              f"{sum(cut for _, cut, _ in got):>5} {pct(seconds, 50):>8} {pct(seconds, 99):>8}")
    failed = sum(not ok for got in records.values() for ok, _, _ in got)
    return 0 if done.returncode == 0 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
