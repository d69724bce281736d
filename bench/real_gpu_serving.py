#!/usr/bin/env python3
"""Triton + tritonops' backend against vLLM driven directly, on the real H200 (issue #21).

Both paths run the same workload (bench/serving_load.py: prompts of exactly 512 tokens sharing no prefix,
128 output tokens with ignore_eos, temperature 0, streamed; a closed loop at 1, 16, 64, 128, 256, 512
streams; a warm-up round, then max(16, 3 x c) timed requests per level) with the same model.json, in the
same device call (bench/real_gpu_serving.sh):

    python bench/real_gpu_serving.py direct VERSION_DIR OUT.json [--levels 1,16,...]
    python bench/real_gpu_serving.py triton URL METRICS_URL MODEL TOKENIZER_DIR OUT.json [--levels ...]
    python bench/real_gpu_serving.py openai URL METRICS_URL MODEL TOKENIZER_DIR OUT.json [--levels ...]  # vLLM's server
    python bench/real_gpu_serving.py compare DIRECT.json TRITON.json      # the table and the goal, exit 1 if missed
    python bench/real_gpu_serving.py replay VERSION_DIR TRACE.jsonl TRITON.json OUT.json [--direct DIRECT.json]
    python bench/real_gpu_serving.py breakdown TRACE.jsonl TRITON.json REPLAY.json [DIRECT.json]
    python bench/real_gpu_serving.py joined TRACE.jsonl TRITON.json   # each request's first token, piece by piece

`replay` answers where a Triton request's first token waited: the Triton run's backend trace (TRACE_FILE) says
when each request reached the engine; the engine alone, in this process, is sent requests at those same moments
(open loop), and `breakdown` sets its first-token times beside the Triton run's, piece by piece. With --direct,
the closed loop runs after it on the same engine.

The goal, per level (Triton path / direct): output tok/s >= 0.97; TTFT p50 <= 1.10 x direct + 5 ms;
inter-token p50 <= 1.05 x; no failed request; every request's tokens arrived (128 each) and :8002's
nv_inference_request_success and vllm:* counters equal what was sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import serving_load  # noqa: E402

GOAL_THROUGHPUT = 0.97
GOAL_TTFT = (1.10, 5.0)   # x direct + ms
GOAL_ITL = 1.05


def _workload(args) -> serving_load.Workload:
    workload = serving_load.Workload()
    if args.levels:
        workload = replace(workload, levels=tuple(int(c) for c in args.levels.split(",")))
    if args.rounds:
        workload = replace(workload, rounds=args.rounds)
    if getattr(args, "think_ms", None):
        workload = replace(workload, think_ms=args.think_ms)
    return workload


def _save(path: str, label: str, workload, levels) -> None:
    document = {"path": label, "workload": serving_load.asdict(workload),
                "levels": [serving_load.summarize(level) for level in levels]}
    with open(path, "w") as f:
        json.dump(document, f, indent=1)


def verdict(direct: dict, triton: dict, workload: dict) -> list:
    """Per level: (concurrency, figures, misses). Pure: the two documents in, the comparison out."""
    rows = []
    by_c = {level["concurrency"]: level for level in direct["levels"]}
    for t in triton["levels"]:
        d = by_c.get(t["concurrency"])
        if d is None:
            continue
        misses = []
        ratio = lambda a, b: None if not a or not b else a / b  # noqa: E731
        throughput = ratio(t["output_tok_s"], d["output_tok_s"])
        ttft_limit = d["ttft_p50_ms"] * GOAL_TTFT[0] + GOAL_TTFT[1] if d["ttft_p50_ms"] is not None else None
        itl = ratio(t["itl_p50_ms"], d["itl_p50_ms"])
        if throughput is None or throughput < GOAL_THROUGHPUT:
            misses.append(f"tok/s {throughput and round(throughput, 3)} < {GOAL_THROUGHPUT}")
        if ttft_limit is None or t["ttft_p50_ms"] is None or t["ttft_p50_ms"] > ttft_limit:
            misses.append(f"TTFT p50 {t['ttft_p50_ms']} > {ttft_limit and round(ttft_limit, 1)} ms")
        if itl is None or itl > GOAL_ITL:
            misses.append(f"ITL p50 x{itl and round(itl, 3)} > {GOAL_ITL}")
        for side, level in (("triton", t), ("direct", d)):
            if level["requests_failed"]:
                misses.append(f"{side}: {level['requests_failed']} failed ({level['errors']})")
            if level["tokens_per_request"] != [workload["output_tokens"]]:
                misses.append(f"{side}: tokens per request {level['tokens_per_request']}")
        counters = t.get("counters") or {}
        sent = t["sent"]
        expected = {"nv_inference_request_success": sent,
                    "vllm:generation_tokens_total": sent * workload["output_tokens"],
                    "vllm:prompt_tokens_total": sent * workload["prompt_tokens"]}
        for name, value in expected.items():
            if counters.get(name) != value:
                misses.append(f"{name} {counters.get(name)} != {value}")
        if counters.get("nv_inference_request_failure"):
            misses.append(f"nv_inference_request_failure {counters['nv_inference_request_failure']}")
        if d["prompt_tokens"] != [workload["prompt_tokens"]]:
            misses.append(f"direct: prompt tokens {d['prompt_tokens']}")
        ready = t.get("ttft_ready_p50_ms"), d.get("ttft_ready_p50_ms")
        ready_met = None if None in ready else ready[0] <= ready[1] * GOAL_TTFT[0] + GOAL_TTFT[1]
        rows.append((t["concurrency"], {"throughput": throughput, "ttft": (t["ttft_p50_ms"], d["ttft_p50_ms"]),
                                        "ttft_ready": ready, "ttft_ready_met": ready_met,
                                        "itl": (t["itl_p50_ms"], d["itl_p50_ms"]), "triton": t, "direct": d},
                     misses))
    return rows


def ready_cell(figures: dict) -> str:
    """TTFT p50 from when each path's client could send (serving_load.Record.ready), and whether the Triton
    path's is within the goal of the direct one's."""
    t, d = figures.get("ttft_ready", (None, None))
    if t is None or d is None:
        return "-"
    return f"{t} / {d} ({'met' if figures['ttft_ready_met'] else 'missed'})"


def table(rows) -> str:
    head = ("| streams | tok/s Triton / direct | ratio | TTFT p50 ms T / D | TTFT p50 ms from ready T / D (goal) "
            "| ITL p50 ms T / D (x) | ITL p99 ms T / D "
            "| e2e p50 ms T / D | events/req T / D | GPU % T / D | ok / failed T, D | goal |")
    lines = [head, "|" + "---|" * 12]
    for c, f, misses in rows:
        t, d = f["triton"], f["direct"]
        itl_x = f"{t['itl_p50_ms'] / d['itl_p50_ms']:.3f}" if t["itl_p50_ms"] and d["itl_p50_ms"] else "-"
        lines.append(
            f"| {c} | {t['output_tok_s']:,} / {d['output_tok_s']:,} | **{f['throughput']:.3f}** | "
            f"{t['ttft_p50_ms']} / {d['ttft_p50_ms']} | {ready_cell(f)} | "
            f"{t['itl_p50_ms']} / {d['itl_p50_ms']} ({itl_x}) | "
            f"{t['itl_p99_ms']} / {d['itl_p99_ms']} | {t['e2e_p50_ms']} / {d['e2e_p50_ms']} | "
            f"{t['events_per_request']} / {d['events_per_request']} | {t['gpu_util_pct']} / {d['gpu_util_pct']} | "
            f"{t['requests_ok']}/{t['requests_failed']}, {d['requests_ok']}/{d['requests_failed']} | "
            f"{'met' if not misses else '; '.join(misses)} |")
    return "\n".join(lines)


def diagnostics(triton: dict, direct: dict | None = None) -> str:
    """Where a Triton request's time went, per level, from :8002's deltas (warm-up requests included): Triton's
    queue before the backend's execute, the backend's own first-token time (engine.generate to its first output),
    the client's first-token p50, and the engine loop's lag (the worst of each second: median / max), beside the
    same loop's lag driven directly where the direct run measured it."""
    lines = ["| streams | Triton queue ms (mean) | execute ms (mean) | backend TTFT ms (mean) | client TTFT p50 ms "
             "| loop lag ms median / max | direct loop lag ms |", "|---|---|---|---|---|---|---|"]
    direct_lag = {level["concurrency"]: (level.get("counters") or {}).get("loop_lag_ms_median_max")
                  for level in (direct or {}).get("levels", [])}
    for level in triton["levels"]:
        c = level.get("counters") or {}
        n = c.get("nv_inference_request_success") or 0
        ttft_n = c.get("vllm:time_to_first_token_seconds_count") or 0
        mean = lambda key, n, scale: f"{c[key] / n * scale:.1f}" if n and key in c else "-"  # noqa: E731
        lag = c.get("loop_lag_ms_median_max")
        lines.append(f"| {level['concurrency']} | {mean('nv_inference_queue_duration_us', n, 1e-3)} | "
                     f"{mean('nv_inference_compute_infer_duration_us', n, 1e-3)} | "
                     f"{mean('vllm:time_to_first_token_seconds_sum', ttft_n, 1e3)} | {level['ttft_p50_ms']} | "
                     f"{'-' if not lag else f'{lag[0]} / {lag[1]}'} | "
                     f"{' / '.join(map(str, direct_lag.get(level['concurrency']) or ['-']))} |")
    return "\n".join(lines)


def _p50_ms(values) -> float | None:
    value = serving_load.percentile(values, 50)
    return None if value is None else round(value * 1000, 1)


def breakdown(by_level: list, triton: dict, replay: dict, direct: dict | None = None) -> str:
    """Per level, a Triton request's first token piece by piece (p50 over the timed requests, from the backend's
    trace): execute to its handler on the engine's loop, the handler to the engine's first output, that output
    to its response sent; the client's TTFT; the engine alone sent requests at the moments the Triton run's
    engine got them (replay), and in its own closed loop. Also how long the timed part's first `c` requests took
    to reach the engine (sent at once by the clients). Pure."""
    t_by_c = {level["concurrency"]: level for level in triton["levels"]}
    r_by_c = {level["concurrency"]: level for level in replay["levels"]}
    d_by_c = {level["concurrency"]: level for level in (direct or {}).get("levels", [])}
    lines = ["| streams | execute -> handler | handler -> engine's first output | first output -> sent "
             "| client TTFT (Triton) | engine alone, Triton's arrivals | engine alone, closed loop "
             "| first round reached the engine over |", "|---|---|---|---|---|---|---|---|"]
    for c, marks in by_level:
        timed = marks[c:]
        first = [m for m in timed if m[2] is not None]
        sent = [m for m in first if m[4] is not None]
        spread = (timed[c - 1][1] - timed[0][1]) if len(timed) >= c else None
        cell = lambda level: "-" if level is None else str(level["ttft_p50_ms"])  # noqa: E731
        lines.append(
            f"| {c} | {_p50_ms([m[1] - m[0] for m in timed])} | {_p50_ms([m[2] - m[1] for m in first])} | "
            f"{_p50_ms([m[4] - m[2] for m in sent])} | {cell(t_by_c.get(c))} | {cell(r_by_c.get(c))} | "
            f"{cell(d_by_c.get(c))} | {'-' if spread is None else round(spread * 1000, 1)} |")
    return "\n".join(lines) + "\n(ms, p50 of the timed requests)"


def joined(marks: list, triton: dict) -> str:
    """Per level, each timed request's first token split from client to engine and back (p50 of each piece over
    the requests found in the backend's trace by their prompt; the pieces' p50s need not add up to the TTFT's).
    Pure."""
    lines = ["| streams | requests joined | client -> execute | execute -> handler | handler -> engine's first "
             "output | output -> sent | sent -> client | client TTFT p50 |", "|---|---|---|---|---|---|---|---|"]
    for level in triton["levels"]:
        pieces = serving_load.joined_pieces(marks, level.get("records") or [])
        lines.append(f"| {level['concurrency']} | {len(pieces['in'])} | " +
                     " | ".join(str(_p50_ms(values)) for values in pieces.values()) + f" | {level['ttft_p50_ms']} |")
    return "\n".join(lines) + "\n(ms, p50 per piece)"


def read_trace(path: str) -> list:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="path", required=True)
    direct = sub.add_parser("direct")
    direct.add_argument("version_dir")
    direct.add_argument("out")
    triton = sub.add_parser("triton")
    for name in ("url", "metrics_url", "model", "tokenizer_dir", "out"):
        triton.add_argument(name)
    triton.add_argument("--processes", type=int, default=8)
    openai = sub.add_parser("openai")  # vLLM's own OpenAI server (issue #43): streamed /v1/completions
    for name in ("url", "metrics_url", "model", "tokenizer_dir", "out"):
        openai.add_argument(name)
    openai.add_argument("--processes", type=int, default=8)
    for p in (direct, triton, openai):
        p.add_argument("--levels")
        p.add_argument("--rounds", type=int)
    direct.add_argument("--think-ms", type=float, help="each closed-loop client waits this long between requests")
    compare = sub.add_parser("compare")
    compare.add_argument("direct")
    compare.add_argument("triton")
    replay = sub.add_parser("replay")
    for name in ("version_dir", "trace", "triton", "out"):
        replay.add_argument(name)
    replay.add_argument("--direct", help="also the closed loop, after the replay, saved here")
    explain = sub.add_parser("breakdown")
    for name in ("trace", "triton", "replay"):
        explain.add_argument(name)
    explain.add_argument("direct", nargs="?")
    join = sub.add_parser("joined")
    join.add_argument("trace")
    join.add_argument("triton")
    args = parser.parse_args()
    say = lambda line: print(line, flush=True)  # noqa: E731
    if args.path == "direct":
        workload = _workload(args)
        levels = asyncio.run(serving_load.run_direct(args.version_dir, workload, say))
        _save(args.out, "direct", workload, levels)
        return 0
    if args.path in ("triton", "openai"):  # the same load through Triton's KServe API or an OpenAI server
        workload = _workload(args)
        run = serving_load.run_triton if args.path == "triton" else serving_load.run_openai
        levels = run(args.url, args.metrics_url, args.model, args.tokenizer_dir, workload, args.processes, say)
        _save(args.out, args.path, workload, levels)
        return 0
    if args.path == "joined":
        with open(args.triton) as f:
            print(joined(read_trace(args.trace), json.load(f)))
        return 0
    if args.path in ("replay", "breakdown"):
        with open(args.triton) as f:
            t = json.load(f)
        by_level = serving_load.trace_by_level(read_trace(args.trace), t["levels"])
        if args.path == "replay":
            workload = serving_load.Workload(**{**t["workload"], "levels": tuple(t["workload"]["levels"])})

            async def both():
                async with serving_load.DirectEngine(args.version_dir, workload, say) as engine:
                    replayed = await serving_load.replay_levels(engine, serving_load.replay_schedules(by_level),
                                                                workload, say)
                    _save(args.out, "replay", workload, replayed)
                    if args.direct:
                        closed = await serving_load.run_levels(
                            lambda texts, c: serving_load.closed_loop(engine.one, texts, c), engine.words,
                            workload, say, "direct", serving_load.OwnLoopLag())
                        _save(args.direct, "direct", workload, closed)

            asyncio.run(both())
            args.replay = args.out
        with open(args.replay) as f:
            r = json.load(f)
        d = None
        if getattr(args, "direct", None):
            with open(args.direct) as f:
                d = json.load(f)
        print(breakdown(by_level, t, r, d))
        print()
        print(joined(read_trace(args.trace), t))
        return 0
    with open(args.direct) as f:
        d = json.load(f)
    with open(args.triton) as f:
        t = json.load(f)
    rows = verdict(d, t, t["workload"])
    print(table(rows))
    print()
    print(diagnostics(t, d))
    missed = [c for c, _, misses in rows if misses]
    print(f"goal {'met at every level' if not missed else 'missed at ' + ', '.join(map(str, missed))}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
