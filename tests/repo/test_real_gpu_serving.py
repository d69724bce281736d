"""What the H200 runs of issue #21 say (tests/fixtures/real/h200-serving, made by bench/real_gpu_serving.sh),
read again here: the figures the README states are computed from the captured documents, the comparison
against the goal agrees with the goal recomputed here, and the load generator's arithmetic is pinned on
hand-made records."""

from __future__ import annotations

import json

import pytest

from tests.support.bench_scripts import bench
from tests.support.paths import REPO

RUNS = REPO / "tests/fixtures/real/h200-serving"

serving = bench("real_gpu_serving")
load = bench("serving_load")


def _doc(path: str) -> dict:
    return json.loads((RUNS / path).read_text())


def _by_c(document: dict) -> dict:
    return {level["concurrency"]: level for level in document["levels"]}


DIRECT_3, DIRECT_9 = "call3-direct-and-crash/direct.json", "call9-direct-and-4threads-1ms/direct.json"
OLD = "call6-4threads-5ms-and-old/triton-old-backend.json"
FOUR_5MS = "call6-4threads-5ms-and-old/triton.json"
FOUR_1MS = "call9-direct-and-4threads-1ms/triton.json"
ONE_1MS = "call10-1thread-1ms/triton-SENDER_THREADS-1.json"
PAIRS = [(DIRECT_3, OLD), (DIRECT_3, FOUR_5MS), (DIRECT_9, FOUR_1MS), (DIRECT_9, ONE_1MS)]


def _ratio(triton: str, direct: str, c: int) -> float:
    return _by_c(_doc(triton))[c]["output_tok_s"] / _by_c(_doc(direct))[c]["output_tok_s"]


def test_the_backend_before_the_issue_reached_half_the_engines_throughput_at_256_streams():
    assert 0.47 < _ratio(OLD, DIRECT_3, 256) < 0.49  # the issue's 0.48x, measured again
    assert _ratio(OLD, DIRECT_3, 512) < 0.55
    assert _by_c(_doc(OLD))[256]["gpu_util_pct"] < 60 < _by_c(_doc(DIRECT_3))[256]["gpu_util_pct"]


def test_the_backend_as_it_ships_keeps_up_with_the_engine_from_64_to_512_streams():
    for c in (64, 128, 256, 512):
        assert _ratio(ONE_1MS, DIRECT_9, c) >= 0.97, c
    for c in (256, 512):  # four sender threads at 1 ms switches starved the engine's loop
        assert _ratio(FOUR_1MS, DIRECT_9, c) < 0.85 and _ratio(ONE_1MS, DIRECT_9, c) > _ratio(FOUR_1MS, DIRECT_9, c)


@pytest.mark.parametrize("direct, triton", PAIRS)
def test_every_run_answered_every_request_with_every_token_and_the_counters_agree(direct, triton):
    d, t = _doc(direct), _doc(triton)
    workload = t["workload"]
    for level in d["levels"] + t["levels"]:
        assert level["requests_failed"] == 0 and level["tokens_per_request"] == [workload["output_tokens"]]
    for level in t["levels"]:
        counters, sent = level["counters"], level["sent"]
        assert counters["nv_inference_request_success"] == sent
        assert counters["vllm:generation_tokens_total"] == sent * workload["output_tokens"]
        assert counters["vllm:prompt_tokens_total"] == sent * workload["prompt_tokens"]
    assert all(level["prompt_tokens"] == [workload["prompt_tokens"]] for level in d["levels"])


@pytest.mark.parametrize("direct, triton", PAIRS)
def test_the_comparison_flags_exactly_the_levels_that_miss_the_goal(direct, triton):
    d, t = _by_c(_doc(direct)), _by_c(_doc(triton))
    rows = serving.verdict(_doc(direct), _doc(triton), _doc(triton)["workload"])
    assert [c for c, _, _ in rows] == sorted(t)
    for c, _, misses in rows:
        throughput = t[c]["output_tok_s"] / d[c]["output_tok_s"] < 0.97
        ttft = t[c]["ttft_p50_ms"] > 1.10 * d[c]["ttft_p50_ms"] + 5
        itl = t[c]["itl_p50_ms"] / d[c]["itl_p50_ms"] > 1.05
        assert (throughput, ttft, itl) == (any(m.startswith("tok/s") for m in misses),
                                           any(m.startswith("TTFT") for m in misses),
                                           any(m.startswith("ITL") for m in misses)), (c, misses)


def test_first_tokens_still_miss_the_goal_from_16_streams_on_the_backend_as_it_ships():
    rows = serving.verdict(_doc(DIRECT_9), _doc(ONE_1MS), _doc(ONE_1MS)["workload"])
    late = [c for c, f, _ in rows if f["ttft"][0] > 1.10 * f["ttft"][1] + 5]
    assert late == [16, 64, 128, 256, 512]  # what the README and the issue note say is still open


def test_summarize_uses_aiperfs_inter_token_latency_and_the_timed_window():
    records = [load.Record(start=10.0, first=10.5, last=11.5, end=11.6, events=3, tokens=5),
               load.Record(start=10.2, first=10.4, last=10.8, end=12.0, events=5, tokens=5),
               load.Record(start=10.1, end=10.3, error="HTTP 500")]
    level = load.Level(2, records=records, window=(10.0, 12.0), sent=4)
    figures = load.summarize(level)
    assert figures["requests_ok"] == 2 and figures["requests_failed"] == 1 and figures["errors"] == ["HTTP 500"]
    assert figures["output_tok_s"] == 5.0  # 10 tokens in 2 s
    assert sorted([figures["itl_p50_ms"], figures["itl_p99_ms"]]) == [100.0, 250.0]  # (1.0 / 4), (0.4 / 4)
    assert figures["ttft_p50_ms"] in (200.0, 500.0) and figures["events_per_request"] == 4.0


def test_the_prompts_are_the_requested_number_of_words_and_never_share_a_first_word_by_design():
    words = [f"w{i}" for i in range(5000)]
    prompts = load.prompts(words, 64, 512, seed=3)
    assert all(len(p.split()) == 512 for p in prompts)
    assert len(set(prompts)) == 64 and prompts == load.prompts(words, 64, 512, seed=3)


def test_metric_values_reads_one_models_counters_from_a_real_metrics_page():
    text = (RUNS / "call10-1thread-1ms/triton-SENDER_THREADS-1-metrics.txt").read_text()
    values = load.metric_values(text, "qwen7b")
    assert values["nv_inference_request_success"] == 3921  # 17 + 64 + 256 + 512 + 1024 + 2048 sent
    assert values["vllm:generation_tokens_total"] == 3921 * 128
    assert load.metric_values(text, "another") == {}


def test_a_backend_trace_splits_by_level_and_replays_at_the_same_offsets():
    # [execute, handler, first output, last output, first sent, final sent]; two levels (c=1 from t=100, c=2 from 200)
    marks = [[200.4, 200.5, 200.7, 201.0, 200.71, 201.01], [100.0, 100.1, 100.3, 100.9, 100.31, 100.91],
             [200.0, 200.1, 200.2, 200.6, 200.21, 200.61], [101.0, 101.2, 101.5, 101.9, 101.52, 101.91],
             [201.0, 201.1, 201.3, 201.8, 201.31, 201.81], [201.0, 201.3, 201.4, 201.9, 201.42, 201.91],
             [99.0, None, None, None, None, 99.2]]  # refused before a handler: in no level
    levels = [{"concurrency": 1, "began": 100.0}, {"concurrency": 2, "began": 200.0}]
    by_level = load.trace_by_level(marks, levels)
    assert [(c, [m[1] for m in ms]) for c, ms in by_level] == [(1, [100.1, 101.2]), (2, [200.1, 200.5, 201.1, 201.3])]
    assert load.replay_schedules(by_level) == [(1, [0.0, 1.1]), (2, [0.0, 0.4, 1.0, 1.2])]
    triton = {"levels": [{"concurrency": 1, "ttft_p50_ms": 310.0}, {"concurrency": 2, "ttft_p50_ms": 250.0}]}
    replay = {"levels": [{"concurrency": 1, "ttft_p50_ms": 290.0}, {"concurrency": 2, "ttft_p50_ms": 150.0}]}
    rows = serving.breakdown(by_level, triton, replay).splitlines()[2:4]
    # level 2's timed requests are the last two: execute->handler 100/300 ms, handler->first 200/100 ms,
    # first->sent 10/20 ms (the lower middle of two); its first timed round (2 requests) reached the engine over 200 ms
    assert rows == ["| 1 | 200.0 | 300.0 | 20.0 | 310.0 | 290.0 | - | 0.0 |",
                    "| 2 | 100.0 | 100.0 | 10.0 | 250.0 | 150.0 | - | 200.0 |"]


def test_client_records_join_the_backends_trace_by_prompt_key_and_split_the_first_token():
    key = load.prompt_key("alpha beta")
    assert len(key) == 12 and key != load.prompt_key("alpha gamma") and int(key, 16) >= 0
    marks = [[10.010, 10.013, 10.100, 10.900, 10.102, 10.901, key],
             [20.0, 20.1, 20.2, 20.9, 20.21, 20.91, "someoneelse0"]]
    records = [[10.000, 10.105, 10.9, 10.905, 128, key],  # sent 10 ms before execute, first event 3 ms after sent
               [30.0, 30.1, 30.9, 30.95, 128, load.prompt_key("not traced")]]
    pieces = load.joined_pieces(marks, records)
    assert {k: [round(v * 1000, 3) for v in vs] for k, vs in pieces.items()} == {
        "in": [10.0], "to_loop": [3.0], "engine": [87.0], "out": [2.0], "http_out": [3.0]}
    table = serving.joined(marks, {"levels": [{"concurrency": 1, "ttft_p50_ms": 105.0, "records": records}]})
    assert table.splitlines()[2] == "| 1 | 1 | 10.0 | 3.0 | 87.0 | 2.0 | 3.0 | 105.0 |"


def _gz(path: str):
    import gzip
    text = gzip.decompress((RUNS / path).read_bytes()).decode()
    return json.loads(text) if path.endswith(".json.gz") else [json.loads(line) for line in text.splitlines()]


CALL12, CALL13 = "call12-direct-intake-and-batching", "call13-joined"


def test_on_the_h200_a_first_token_waits_in_the_engine_not_in_triton_or_the_backend():
    triton, marks = _gz(f"{CALL13}/triton.json.gz"), _gz(f"{CALL13}/triton-trace.jsonl.gz")
    for level in triton["levels"]:
        pieces = load.joined_pieces(marks, level["records"])
        assert len(pieces["in"]) == level["requests_ok"] == len(level["records"])  # every timed request found
        p50 = {name: load.percentile(values, 50) * 1000 for name, values in pieces.items()}
        assert p50["in"] < 3 and p50["http_out"] < 0.5 and p50["out"] < 3  # Triton's HTTP, the backend's send
        if level["concurrency"] >= 16:  # the engine's own first-token time is most of the client's
            assert p50["engine"] > 0.85 * level["ttft_p50_ms"], (level["concurrency"], p50)


def test_dynamic_batching_emptied_tritons_queue_without_moving_first_tokens():
    plain, batched = _by_c(_gz(f"{CALL12}/triton.json.gz")), _by_c(_gz(f"{CALL12}/triton-batching-512.json.gz"))
    for c in (256, 512):
        queue = {name: level[c]["counters"]["nv_inference_queue_duration_us"] / level[c]["sent"] / 1000
                 for name, level in (("plain", plain), ("batched", batched))}
        assert queue["plain"] > 10 and queue["batched"] < 3, queue  # ms per request
        assert batched[c]["ttft_p50_ms"] > 0.95 * plain[c]["ttft_p50_ms"]


def test_the_direct_path_starts_a_requests_clock_only_when_the_engines_loop_gets_to_it():
    # a round of 512 generate() calls issued at once: each starts after the ones before it were read and
    # tokenized on the same loop, so the direct reference's first round "starts" over more than half a second
    level = _by_c(_gz(f"{CALL12}/direct.json.gz"))[512]
    starts = sorted(r[0] for r in level["records"])[:512]
    assert starts[-1] - starts[0] > 0.5
    triton = _by_c(_gz(f"{CALL12}/triton.json.gz"))[512]  # the HTTP clients sent theirs within a few ms
    assert sorted(r[0] for r in triton["records"])[511] - min(r[0] for r in triton["records"]) < 0.02


def test_a_closed_loop_times_each_request_from_when_its_client_could_send_it():
    # two workers, four texts: each worker's first request is ready when the round began, its next when the
    # engine handed over the previous one's final output (done), or, without that, when the previous one ended
    import asyncio
    import time

    base = time.monotonic() + 100  # the requests' own (made-up) times, all after the round began
    starts = iter([base, base + 1, base + 2, base + 3])

    async def one(text):
        await asyncio.sleep(0)
        start = next(starts)
        done = start + 0.5 if text == "a" else None  # b has no done: its worker's next is ready at b's end
        return load.Record(start=start, first=start + 0.2, last=start + 0.7, end=start + 0.8, tokens=2, done=done,
                           key=text)

    records = asyncio.run(load.closed_loop(one, ["a", "b", "c", "d"], 2))
    ready = {r.key: r.ready for r in records}
    assert ready["a"] == ready["b"] < base  # the round's start
    # a (started at base) is followed on its worker by c, b (base + 1) by d: workers take texts in order
    assert (round(ready["c"] - base, 6), round(ready["d"] - base, 6)) == (0.5, 1.8)
    level = load.Level(2, records=[r for r in records if r.key in ("c", "d")], window=(base + 2, base + 3.8))
    figures = load.summarize(level)
    # c: first at base + 2.2, ready base + 0.5 -> 1,700 ms; d: base + 3.2 - (base + 1.8) -> 1,400 ms
    assert sorted([figures["ttft_ready_p50_ms"], figures["ttft_ready_p99_ms"]]) == [1400.0, 1700.0]
    assert figures["ttft_p50_ms"] == 200.0
    assert [round(r[6] - base, 3) for r in figures["records"]] == [0.5, 1.8]


CALL14 = "call14-ready-clock"


def test_the_direct_paths_own_clock_hides_little_of_its_loops_wait():
    # call 14 timed each direct request from when its worker's previous request was handed over by vLLM's output
    # handler too: at p50 that adds under 5 % (the wait before generate() is small except in a round sent at once)
    direct = _gz(f"{CALL14}/direct.json.gz")
    for level in direct["levels"]:
        assert level["ttft_ready_p50_ms"] >= level["ttft_p50_ms"] - 0.5
        assert level["ttft_ready_p50_ms"] < 1.05 * level["ttft_p50_ms"], level["concurrency"]
    rows = serving.verdict(direct, _gz(f"{CALL14}/triton.json.gz"), direct["workload"])
    assert [c for c, f, _ in rows if not f["ttft_ready_met"]] == [16, 128, 256, 512]


def test_the_triton_path_varies_from_run_to_run_more_than_the_goal_allows():
    # the same backend (bar a trace field) and workload in calls 12, 13 and 14: TTFT p50 at 256 streams
    ttft = [_by_c(_gz(f"{call}/triton.json.gz"))[256]["ttft_p50_ms"] for call in (CALL12, CALL13, CALL14)]
    assert min(ttft) < 700 and max(ttft) > 1200
    direct = [_by_c(_gz(f"{call}/direct.json.gz"))[256]["ttft_p50_ms"] for call in (CALL12, CALL14)]
    assert max(direct) / min(direct) < 1.05


CALL15 = "call15-steady-state"


def _steady() -> tuple[dict, dict]:
    """Call 15's 12-round runs: direct per level from its two documents, Triton at 1, 16 and 512 from the
    unprofiled run and at 64-256 from the level-by-level run py-spy watched."""
    d1, d2 = _gz(f"{CALL15}/direct-64-128-256.json.gz"), _gz(f"{CALL15}/direct-1-16-512.json.gz")
    direct = {"workload": d1["workload"], "levels": d1["levels"] + d2["levels"]}
    both = _gz(f"{CALL15}/triton-1-16-512.json.gz")
    levels = [level for level in both["levels"] if level["concurrency"] in (1, 16, 512)]
    for c in (64, 128, 256):
        levels += _gz(f"{CALL15}/triton-c{c}-profiled.json.gz")["levels"]
    return direct, {"workload": both["workload"], "levels": levels}


def test_in_a_steady_state_the_triton_path_keeps_the_engines_throughput_and_beats_the_lockstep_direct_loop():
    direct, triton = _steady()
    assert direct["workload"]["rounds"] == triton["workload"]["rounds"] == 12
    rows = {c: (f, misses) for c, f, misses in serving.verdict(direct, triton, triton["workload"])}
    assert sorted(rows) == [1, 16, 64, 128, 256, 512]
    assert all(f["throughput"] >= 0.97 for f, _ in rows.values())
    for c in (128, 256):  # the in-process clients stay in lockstep: prefill waves, slower decode steps
        f, misses = rows[c]
        assert f["throughput"] > 1.3 and f["itl"][0] < 0.75 * f["itl"][1] and not misses
    assert [c for c, (_, misses) in sorted(rows.items()) if misses] == [16, 512]  # first tokens, still


def test_the_same_512_stream_run_twice_moved_first_tokens_by_half():
    once = _by_c(_gz(f"{CALL15}/triton-1-16-512.json.gz"))[512]
    again = _by_c(_gz(f"{CALL15}/triton-c512-profiled.json.gz"))[512]
    assert once["ttft_p50_ms"] > 1.9 * again["ttft_p50_ms"]
    assert abs(once["output_tok_s"] / again["output_tok_s"] - 1) < 0.02


def _loop_share(path: str, function: str) -> tuple[float, float]:
    """From a py-spy raw profile of the stub (--threads --idle): the share of the engine loop's samples that are
    not idle in its selector, and the share that runs `function` (anywhere in the stack)."""
    import gzip
    total = busy = inside = 0
    for line in gzip.decompress((RUNS / path).read_bytes()).decode().splitlines():
        stack, count = line.rsplit(" ", 1)
        frames = stack.split(";")
        if "vllm-backend-loop" not in frames[0]:
            continue
        total += int(count)
        busy += int(count) * ("EpollSelector.select" not in frames[-1])
        inside += int(count) * any(f.startswith(function + " ") for f in frames)
    return busy / total, inside / total


def test_at_256_streams_the_engines_loop_is_nearly_always_busy_and_a_quarter_of_it_tokenizes_prompts():
    busy, tokenizing = _loop_share(f"{CALL15}/py-spy/spy-c256-all.txt.gz", "InputPreprocessor._tokenize_prompt")
    assert busy > 0.85 and tokenizing > 0.2
    busy, tokenizing = _loop_share(f"{CALL15}/py-spy/spy-c512-all.txt.gz", "InputPreprocessor._tokenize_prompt")
    assert 0.3 < busy < 0.7 and tokenizing > 0.05


CALL16 = "call16-renderer"


def _queue_ms(level: dict) -> float:
    counters = level["counters"]
    return counters["nv_inference_queue_duration_us"] / counters["nv_inference_request_success"] / 1000


def test_tokenizing_on_vllms_renderer_thread_took_the_gil_from_the_loop_and_execute_at_256_streams():
    # call 16, the same warm machine: direct, then Triton with the renderer path, then with the engine tokenizing
    direct = _by_c(_gz(f"{CALL16}/direct-64-128-256.json.gz"))
    renderer = _by_c(_gz(f"{CALL16}/triton-64-128-256.json.gz"))
    on_loop = _by_c(_gz(f"{CALL16}/triton-on-loop-128-256.json.gz"))
    engine = direct[256]["output_tok_s"]
    assert renderer[256]["output_tok_s"] / engine < 0.9 and on_loop[256]["output_tok_s"] / engine > 0.97
    assert renderer[256]["gpu_util_pct"] < 90 < on_loop[256]["gpu_util_pct"]
    assert _queue_ms(renderer[256]) > 5 * _queue_ms(on_loop[256])  # execute() waited for the GIL
    for run in (renderer, on_loop):
        for c in (128, 256):
            assert run[c]["requests_failed"] == 0 and run[c]["counters"]["nv_inference_request_failure"] == 0
            assert run[c]["counters"]["vllm:generation_tokens_total"] == run[c]["sent"] * 128


def test_a_closed_loop_client_with_a_think_time_waits_it_and_its_clock_starts_after_it():
    import asyncio
    import time

    sent = []

    async def one(text):
        sent.append((text, time.monotonic()))
        start = time.monotonic()
        await asyncio.sleep(0.01)
        return load.Record(start=start, first=start + 0.005, last=start + 0.01, end=time.monotonic(), tokens=2,
                           key=text)

    records = asyncio.run(load.closed_loop(one, ["a", "b", "c"], 1, think_s=0.05))
    at = dict(sent)
    by_key = {r.key: r for r in records}
    assert at["b"] - by_key["a"].end >= 0.05 and at["c"] - by_key["b"].end >= 0.05  # waited its think time
    assert by_key["b"].ready == by_key["a"].end + 0.05  # ready once the think time is over, not when a ended
    assert by_key["a"].ready < at["a"]  # the first request: the round's start, no wait


CALL17 = "call17-think-time"


def test_three_ms_between_an_answer_and_the_next_request_move_the_engines_first_tokens_as_far_as_triton_does():
    without = _by_c(_gz(f"{CALL16}/direct-64-128-256.json.gz"))
    think = _gz(f"{CALL17}/direct-think3-128-256.json.gz")
    assert think["workload"]["think_ms"] == 3
    think = _by_c(think)
    triton = _by_c(_gz(f"{CALL16}/triton-on-loop-128-256.json.gz"))
    for c in (128, 256):
        assert think[c]["ttft_p50_ms"] > without[c]["ttft_p50_ms"] + 100  # the round trip alone
        assert abs(triton[c]["ttft_p50_ms"] / think[c]["ttft_p50_ms"] - 1) < 0.06  # as far as the Triton path
        assert think[c]["output_tok_s"] >= without[c]["output_tok_s"]  # and the engine lost no throughput
        assert think[c]["ttft_p50_ms"] * 1.10 + 5 > triton[c]["ttft_p50_ms"]  # the goal's bound, against it


CALL18 = "call18-think3-both"


def _call18(path: str) -> dict:
    import gzip

    return json.loads(gzip.decompress((RUNS / CALL18 / path).read_bytes()))


def test_session_14_on_one_machine_keeps_the_engines_throughput_and_first_tokens_miss_at_512_streams_only():
    direct, first, again = _call18("direct-think3.json.gz"), _call18("triton.json.gz"), _call18("triton-again-256-512.json.gz")
    for triton in (first, again):  # every request answered with every token, the counters equal to what was sent
        workload = triton["workload"]
        for level in triton["levels"]:
            assert level["requests_failed"] == 0 and level["tokens_per_request"] == [workload["output_tokens"]]
            assert level["counters"]["nv_inference_request_success"] == level["sent"]
            assert level["counters"]["vllm:generation_tokens_total"] == level["sent"] * workload["output_tokens"]
    d, t, t2 = _by_c(direct), _by_c(first), _by_c(again)
    ratios = {c: t[c]["output_tok_s"] / d[c]["output_tok_s"] for c in t}
    assert all(ratios[c] >= 0.97 for c in (1, 16, 64, 128, 256)) and 0.96 < ratios[512] < 0.97
    assert t2[512]["output_tok_s"] / d[512]["output_tok_s"] >= 0.98  # the same level a minute later
    assert all(t[c]["itl_p50_ms"] <= 1.05 * d[c]["itl_p50_ms"] for c in t)
    rows = {c: misses for c, _, misses in serving.verdict(direct, first, first["workload"])}
    assert [c for c, misses in rows.items() if misses] == [16, 512]
    assert rows[16] == ["TTFT p50 173.7 > 171.1 ms"]  # 2.6 ms over; within the goal on the ready clock
    late = {c for c, _, misses in serving.verdict(direct, again, again["workload"]) if misses}
    assert late == {512}
