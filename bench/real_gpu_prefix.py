#!/usr/bin/env python3
"""Issue #44's measurement on a real GPU: the door's prefix routing against leastconn, two Triton replicas (tritonops'
backend, real vLLM) behind Debian's HAProxy 2.6 with the configuration tritonops renders, an open-loop shared-prefix
load. bench/real_gpu_prefix.sh runs it on the lent GPU; this file is its client, its renderer and its verdict.

The workload: P tenants, each a prefix of L words of the model's stand-in word-level tokenizer (one token each; the
tenants differ from their first word), every request its tenant's prefix then S fresh words, O tokens out
(`ignore_eos`), streamed from /generate_stream; tenants picked at random (uniform, or `--skew F`: tenant 0 gets F of
the requests, the others share the rest); requests sent at Poisson moments at `--rate` per second for `--warmup-s`
(not counted) then `--seconds` (counted). Each arm of a cell gets tenants of its own (seeded by cell, arm and
repeat), so no arm finds another's prefixes in the caches. Every client exception is recorded.

Arms: `leastconn` and `prefix` (with `--factor`) are the doors tritonops renders (render/door_config.py; the prefix
key's Lua script beside them); `oracle` is two one-server doors, the client sending each tenant to the replica it
was pinned to (tenants dealt so that both replicas get the same share of the requests).

    render ARM --servers ADDR:PORT,ADDR:PORT --maxconn M --port P --socket S --lua-dir D --out DIR [--factor F]
    calibrate --door URL ... --concurrency C --seconds T --out FILE     closed loop: the replicas' capacity, req/s
    load --arm ARM --cell CELL --door URL [--oracle URL,URL] ... --out FILE
    table DIR [--goals]                                                  the figures; --goals: exit 1 on a miss
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

import serving_load  # noqa: E402

MODEL = "qwen7b"
COUNTERS = ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "nv_inference_request_success",
            "vllm:generation_tokens_total")


# -- the doors -------------------------------------------------------------------------------------------
def render(args) -> int:
    from tritonops.door.program import PREFIX_KEY
    from tritonops.render.door_config import (
        LEASTCONN, PREFIX, BalancedReplica, BalancerConfig, BalancerGlobals, render_balancer_files,
    )

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.cfg"):
        old.unlink()
    servers = [s.rsplit(":", 1) for s in args.servers.split(",")]
    if args.arm == "oracle":  # one door per replica: the client picks the replica
        lines = [f"global\n    master-worker\n    maxconn 8000\n    stats socket {args.socket} mode 600 level admin\n",
                 "defaults\n    mode http\n    timeout connect 5s\n    timeout client 900s\n    timeout server 900s\n"
                 "    timeout queue 2000ms\n    option http-no-delay\n"]
        for i, (address, port) in enumerate(servers):
            lines.append(f"frontend pinned{i}\n    bind 127.0.0.1:{args.port + 1 + i}\n    default_backend r{i}\n"
                         f"backend r{i}\n    server r{i} {address}:{port} maxconn {args.maxconn}\n")
        (out / "00-oracle.cfg").write_text("\n".join(lines))
        return 0
    lua = Path(args.lua_dir)
    lua.mkdir(parents=True, exist_ok=True)
    (lua / PREFIX_KEY.name).write_text(PREFIX_KEY.text)
    replicas = tuple(BalancedReplica(f"r{i}", address, int(port), int(port) + 1, args.maxconn)
                     for i, (address, port) in enumerate(servers))
    config = BalancerConfig("bench", replicas, http_port=args.port, grpc_port=None, bind_address="127.0.0.1",
                            max_queue=100_000, queue_timeout_ms=60_000, check_interval_ms=1000,
                            routing=PREFIX if args.arm == "prefix" else LEASTCONN, balance_factor=args.factor)
    globals_ = BalancerGlobals(stats_socket=args.socket, metrics_port=args.port + 405,
                               lua_scripts=(str(lua / PREFIX_KEY.name),) if args.arm == "prefix" else ())
    for name, text in render_balancer_files(globals_, [config]).items():
        (out / name).write_text(text)
    return 0


def door_log(socket_path: str) -> list:
    """The door's request log (tritonops.door.request_log) as HAProxy's ring holds it."""
    from tritonops.door.request_log import parse_request_log, show_events

    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(10)
        client.connect(socket_path)
        client.sendall(show_events().encode() + b"\n")
        chunks = []
        while chunk := client.recv(1 << 20):
            chunks.append(chunk)
    return list(parse_request_log(b"".join(chunks).decode(errors="replace")))


# -- the workload ----------------------------------------------------------------------------------------
def tenants(words: list, count: int, length: int, seed: int) -> list:
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(length)) for _ in range(count)]


def weights(count: int, skew: float | None) -> list:
    if not skew:
        return [1.0 / count] * count
    return [skew] + [(1.0 - skew) / (count - 1)] * (count - 1)


def pins(shares: list, replicas: int) -> list:
    """The oracle: each tenant's replica, the largest tenants first to the least loaded replica."""
    load, pinned = [0.0] * replicas, [0] * len(shares)
    for tenant in sorted(range(len(shares)), key=lambda t: -shares[t]):
        target = min(range(replicas), key=lambda r: load[r])
        pinned[tenant] = target
        load[target] += shares[tenant]
    return pinned


def body(text: str, output_tokens: int) -> bytes:
    return json.dumps({"text_input": text, "parameters": {"stream": True, "max_tokens": output_tokens,
                                                          "ignore_eos": True, "temperature": 0}}).encode()


def counters(urls: list) -> list:
    read = []
    for url in urls:
        with urllib.request.urlopen(url, timeout=10) as reply:
            text = reply.read().decode()
        values = dict.fromkeys(COUNTERS, 0.0)
        for line in text.splitlines():
            for name in COUNTERS:
                if line.startswith(name + "{") and f'model="{MODEL}"' in line:
                    values[name] += float(line.rsplit(" ", 1)[1])
        read.append(values)
    return read


async def send(url: str, payload: bytes) -> serving_load.Record:
    parts = urllib.parse.urlsplit(url)
    return await serving_load.stream_once(parts.hostname, parts.port, f"/v2/models/{MODEL}/generate_stream",
                                          payload, {})


def workload(args, seed: int, pattern: int):
    """Tenants' prefixes from `seed`; which tenant each request is and its suffix from `pattern` (the same for
    every arm of a cell and repeat, so that they see the same load)."""
    words = serving_load.vocabulary(args.tokenizer)
    prefixes = tenants(words, args.tenants, args.prefix_tokens, seed)
    rng = random.Random(pattern)
    shares = weights(args.tenants, args.skew)

    def request() -> tuple[int, bytes]:
        tenant = rng.choices(range(args.tenants), shares)[0]
        suffix = " ".join(rng.choice(words) for _ in range(args.suffix_tokens))
        return tenant, body(prefixes[tenant] + " " + suffix, args.output_tokens)

    return request, shares


def arm_seed(cell: str, arm: str, repeat: int) -> int:
    return sum(ord(c) * 131 ** i for i, c in enumerate(f"{cell}/{arm}/{repeat}")) % (2 ** 31)


def calibrate(args) -> int:
    """Closed loop, `--concurrency` streams for `--seconds`: the requests per second the replicas finish."""
    request, _ = workload(args, arm_seed(args.cell, "calibrate", 0), arm_seed(args.cell, "calibrate", 1))

    async def run():
        stop = time.monotonic() + args.seconds
        done: list = []

        async def worker():
            while time.monotonic() < stop:
                done.append(await send(args.door, request()[1]))

        began = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        return done, time.monotonic() - began

    records, seconds = asyncio.run(run())
    ok = [r for r in records if r.error is None]
    # the first `concurrency` requests found empty caches: the rate counts the rest
    rate = max(len(ok) - args.concurrency, 0) / seconds
    figures = {"cell": args.cell, "concurrency": args.concurrency, "seconds": round(seconds, 1),
               "requests_ok": len(ok), "requests_failed": len(records) - len(ok),
               "errors": sorted({r.error for r in records if r.error})[:5], "rate": round(rate, 2)}
    Path(args.out).write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures))
    return 0 if ok else 1


def load(args) -> int:
    from tritonops.door.request_log import routing
    from tritonops.render.door_config import http_backend

    seed, pattern = arm_seed(args.cell, args.arm, args.repeat), arm_seed(args.cell, "pattern", args.repeat)
    request, shares = workload(args, seed, pattern)
    oracle = args.oracle.split(",") if args.oracle else []
    pinned = pins(shares, len(oracle)) if oracle else []
    metrics = args.metrics.split(",")
    rng = random.Random(pattern + 1)  # the same moments for every arm
    total = args.warmup_s + args.seconds
    moments, t = [], 0.0
    while True:
        t += rng.expovariate(args.rate)
        if t >= total:
            break
        moments.append(t)

    chosen = [request() for _ in moments]  # made before the clock starts, in order

    async def run():
        began = time.monotonic()
        records: list = []
        marks: dict = {}

        async def at(moment: float, tenant: int, payload: bytes):
            await asyncio.sleep(max(0.0, began + moment - time.monotonic()))
            url = oracle[pinned[tenant]] if oracle else args.door
            record = await send(url, payload)
            records.append((moment, tenant, record))

        async def window():
            await asyncio.sleep(max(0.0, began + args.warmup_s - time.monotonic()))
            marks["start"] = await asyncio.to_thread(counters, metrics)
            marks["start_at"] = time.monotonic()

        await asyncio.gather(window(), *(at(m, t, p) for m, (t, p) in zip(moments, chosen)))
        marks["end_at"] = time.monotonic()
        marks["end"] = await asyncio.to_thread(counters, metrics)
        return records, marks

    records, marks = asyncio.run(run())
    counted = [(tenant, r) for moment, tenant, r in records if moment >= args.warmup_s]
    ok = [r for _, r in counted if r.error is None]
    failed = [r for _, r in counted if r.error is not None]
    ttft = [r.first - r.start for r in ok if r.first is not None]
    e2e = [r.end - r.start for r in ok]
    last_end = max((r.end for r in ok), default=marks["start_at"])
    window_s = max(last_end - marks["start_at"], 1e-9)
    delta = [{k: end[k] - start[k] for k in COUNTERS} for start, end in zip(marks["start"], marks["end"])]
    hits = sum(d["vllm:prefix_cache_hits_total"] for d in delta)
    queries = sum(d["vllm:prefix_cache_queries_total"] for d in delta)
    per_replica = [int(d["nv_inference_request_success"]) for d in delta]
    ms = lambda v: None if v is None else round(v * 1000, 1)  # noqa: E731
    logged = door_log(args.socket) if args.socket and not oracle else []
    figures = {
        "cell": args.cell, "arm": args.arm, "repeat": args.repeat, "seed": seed, "rate": args.rate,
        "tenants": args.tenants, "prefix_tokens": args.prefix_tokens, "suffix_tokens": args.suffix_tokens,
        "output_tokens": args.output_tokens, "skew": args.skew, "seconds": args.seconds, "warmup_s": args.warmup_s,
        "sent": len(counted), "requests_ok": len(ok), "requests_failed": len(failed),
        "errors": dict(Counter(r.error for r in failed).most_common(5)),
        "http_503": sum(1 for r in failed if "503" in (r.error or "")),
        "ttft_p50_ms": ms(serving_load.percentile(ttft, 50)), "ttft_p90_ms": ms(serving_load.percentile(ttft, 90)),
        "ttft_p99_ms": ms(serving_load.percentile(ttft, 99)), "e2e_p50_ms": ms(serving_load.percentile(e2e, 50)),
        "output_tok_s": round(sum(r.tokens for r in ok) / window_s, 1),
        "hit_rate": round(hits / queries, 4) if queries else None,
        "replica_hit_rates": [round(d["vllm:prefix_cache_hits_total"] / d["vllm:prefix_cache_queries_total"], 4)
                              if d["vllm:prefix_cache_queries_total"] else None for d in delta],
        "requests_per_replica": per_replica,
        "replica_ratio": round(max(per_replica) / min(per_replica), 3) if per_replica and min(per_replica) else None,
        "stickiness": routing(logged, http_backend("bench")).stickiness, "logged": len(logged),
        "tenants_per_replica": _tenants_per_replica(logged),
    }
    Path(args.out).write_text(json.dumps(figures, indent=1))
    print(json.dumps({k: v for k, v in figures.items() if k not in ("errors",)}))
    return 0


def _tenants_per_replica(logged: list) -> dict:
    """Per replica, the keys whose requests mostly reached it."""
    by_key: dict = {}
    for row in logged:
        if row.key_hash:
            by_key.setdefault(row.key_hash, Counter())[row.server] += 1
    return dict(Counter(c.most_common(1)[0][0] for c in by_key.values()))


# -- the verdict -----------------------------------------------------------------------------------------
ARMS = ("leastconn", "prefix150", "prefix0", "oracle")


def _pct(value) -> str:
    return "-" if value is None else f"{value:.1%}"


def table(args) -> int:
    runs = [json.loads(p.read_text()) for p in sorted(Path(args.dir).glob("load-*.json"))]
    lines = ["| cell | arm | repeat | rate/s | sent | failed (503) | hit rate | per replica | requests per replica |"
             " TTFT p50 / p90 / p99 ms | e2e p50 ms | output tok/s | stickiness |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(runs, key=lambda r: (r["cell"], ARMS.index(r["arm"]) if r["arm"] in ARMS else 9, r["repeat"])):
        rates = " / ".join("-" if h is None else f"{h:.0%}" for h in r["replica_hit_rates"])
        lines.append(
            f"| {r['cell']} | {r['arm']} | {r['repeat']} | {r['rate']} | {r['sent']} | {r['requests_failed']} "
            f"({r['http_503']}) | {_pct(r['hit_rate'])} | {rates} | "
            f"{' / '.join(map(str, r['requests_per_replica']))} | {r['ttft_p50_ms']} / {r['ttft_p90_ms']} / "
            f"{r['ttft_p99_ms']} | {r['e2e_p50_ms']} | {r['output_tok_s']} | "
            f"{_pct(r['stickiness'])} |")
    print("\n".join(lines))
    if not args.goals:
        return 0
    misses, said = [], []

    def mean(cell: str, arm: str, key: str):
        values = [r[key] for r in runs if r["cell"] == cell and r["arm"] == arm and r[key] is not None]
        return round(sum(values) / len(values), 4) if values else None  # over the repeats

    def check(ok, text):
        (said if ok else misses).append(text)

    cells = {r["cell"] for r in runs}
    if "1.6x" in cells:
        c = "1.6x"
        hit_p, hit_l, hit_o = mean(c, "prefix150", "hit_rate"), mean(c, "leastconn", "hit_rate"), \
            mean(c, "oracle", "hit_rate")
        if None not in (hit_p, hit_l, hit_o):
            check(hit_p >= 0.8 * hit_o, f"1.6x: hit rate {hit_p:.1%} >= 80% of the oracle's {hit_o:.1%}")
            check(hit_p >= hit_l + 0.25, f"1.6x: hit rate {hit_p:.1%} >= leastconn's {hit_l:.1%} + 25 points")
        t_p, t_l = mean(c, "prefix150", "ttft_p50_ms"), mean(c, "leastconn", "ttft_p50_ms")
        check(t_p is not None and t_l is not None and t_p <= 0.7 * t_l,
              f"1.6x: TTFT p50 {t_p} ms >= 30% below leastconn's {t_l} ms")
        k_p, k_l = mean(c, "prefix150", "output_tok_s"), mean(c, "leastconn", "output_tok_s")
        check(k_p is not None and k_l is not None and k_p >= 0.97 * k_l,
              f"1.6x: output tokens/s {k_p} not below leastconn's {k_l} by more than 3%")
        e_p, e_l = mean(c, "prefix150", "http_503"), mean(c, "leastconn", "http_503")
        check(e_p is not None and e_l is not None and e_p <= e_l, f"1.6x: 503s {e_p} <= leastconn's {e_l}")
        ratio = mean(c, "prefix150", "replica_ratio")
        check(ratio is not None and ratio <= 1.5, f"1.6x: requests per replica within 1.5x ({ratio})")
    if "0.6x" in cells:
        c = "0.6x"
        for key, what in (("ttft_p50_ms", "TTFT p50"), ("output_tok_s", "output tokens/s")):
            p, l_ = mean(c, "prefix150", key), mean(c, "leastconn", key)
            check(p is not None and l_ is not None and abs(p - l_) <= 0.05 * l_,
                  f"0.6x: {what} {p} within 5% of leastconn's {l_}")
    if "skewed" in cells:
        p, l_ = mean("skewed", "prefix150", "ttft_p99_ms"), mean("skewed", "leastconn", "ttft_p99_ms")
        check(p is not None and l_ is not None and p <= 1.10 * l_,
              f"skewed: TTFT p99 {p} ms within 10% of leastconn's {l_} ms")
    print("\n".join([f"met: {s}" for s in said] + [f"MISSED: {m}" for m in misses]))
    return 1 if misses else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("render")
    r.add_argument("arm", choices=("leastconn", "prefix", "oracle"))
    r.add_argument("--servers", required=True)
    r.add_argument("--maxconn", type=int, required=True)
    r.add_argument("--port", type=int, default=9000)
    r.add_argument("--socket", required=True)
    r.add_argument("--lua-dir", required=True)
    r.add_argument("--factor", type=int, default=150)
    r.add_argument("--out", required=True)
    for name in ("calibrate", "load"):
        p = sub.add_parser(name)
        p.add_argument("--cell", required=True)
        p.add_argument("--door", required=True)
        p.add_argument("--tokenizer", required=True)
        p.add_argument("--tenants", type=int, required=True)
        p.add_argument("--prefix-tokens", type=int, required=True)
        p.add_argument("--suffix-tokens", type=int, default=64)
        p.add_argument("--output-tokens", type=int, default=32)
        p.add_argument("--skew", type=float, default=None)
        p.add_argument("--seconds", type=float, required=True)
        p.add_argument("--out", required=True)
        if name == "calibrate":
            p.add_argument("--concurrency", type=int, required=True)
        else:
            p.add_argument("--arm", required=True)
            p.add_argument("--repeat", type=int, default=0)
            p.add_argument("--rate", type=float, required=True)
            p.add_argument("--warmup-s", type=float, default=10.0)
            p.add_argument("--metrics", required=True)
            p.add_argument("--oracle", default="")
            p.add_argument("--socket", default="")
    t = sub.add_parser("table")
    t.add_argument("dir")
    t.add_argument("--goals", action="store_true")
    args = parser.parse_args()
    return {"render": render, "calibrate": calibrate, "load": load, "table": table}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
