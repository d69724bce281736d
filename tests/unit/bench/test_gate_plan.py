"""deploy's canary gate as data (bench/gate_plan.py): its settings from the inventory with file:line errors, the
previous release's run it is compared with, and its verdict on aiperf's real exports (tests/fixtures/aiperf/: a
release whose engine takes one request at a time against one that takes four)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.support.bench import Host, fixture_level
from tritonops.errors import InputError
from tritonops.bench.plan import Workload
from tritonops.bench.gate_plan import GateSettings, baseline, gate_settings, verdict
from tritonops.bench.results import BenchSummary, LevelResult

GATE = GateSettings(concurrency=(4,), requests=8, input_tokens=16, output_tokens=32)
WORKLOAD = {"input_tokens": 16, "output_tokens": 32}


def run(release: str, started: str, *levels, through: str = "replicas", workload=None) -> BenchSummary:
    return BenchSummary("dep", release, "vllm_model", through, ("s1-r0",), dict(workload or WORKLOAD), levels,
                        started, "0.13.0")


def test_the_settings_default_and_each_bad_value_names_its_file_and_line(tmp_path):
    from tritonops.inventory import load_inventory

    assert gate_settings(Host("s1")) == GateSettings()
    assert GateSettings().workload("m") == Workload("m", (8,), input_tokens=128, output_tokens=64, requests=32)
    given = Host("s1", vars={"tritonops_bench_gate_throughput": "0.2", "tritonops_bench_gate_ttft_p99": 0.5,
                             "tritonops_bench_gate_concurrency": "4,16", "tritonops_bench_gate_requests": 40,
                             "tritonops_bench_gate_input_tokens": 16, "tritonops_bench_gate_output_tokens": "32"})
    assert gate_settings(given) == GateSettings(0.2, 0.5, (4, 16), 40, 16, 32)
    for var, value, said in (("tritonops_bench_gate_throughput", "-0.1", "more than 0"),
                             ("tritonops_bench_gate_ttft_p99", "fast", "must be a number"),
                             ("tritonops_bench_gate_concurrency", "8,x", "whole numbers"),
                             ("tritonops_bench_gate_requests", 0, "at least 1")):
        path = tmp_path / "prod.yml"
        path.write_text(f"all:\n  hosts:\n    s1:\n      ansible_host: 10.0.0.1\n      {var}: {value!r}\n")
        host = load_inventory([str(path)]).hosts[0]
        with pytest.raises(InputError, match=said) as err:
            gate_settings(host)
        assert err.value.where == f"{path}:5", var


def test_the_baseline_is_the_newest_run_of_the_previous_release_measured_the_same_way():
    four = fixture_level("fast_c4.json", 4)
    now = run("r2", "2026-12-02T16:00:00Z", fixture_level("slow_c4.json", 4))
    older = run("r1", "2026-12-02T15:00:00Z", four)
    newer = run("r1", "2026-12-02T15:30:00Z", four, fixture_level("fast_c1.json", 1))
    through_door = run("r1", "2026-12-02T15:40:00Z", four, through="balancer")
    longer = run("r1", "2026-12-02T15:50:00Z", four, workload={"input_tokens": 16, "output_tokens": 64})
    other_release = run("r0", "2026-12-02T15:55:00Z", four)
    other_level = run("r1", "2026-12-02T15:56:00Z", fixture_level("fast_c1.json", 1))
    other_mode = run("r1", "2026-12-02T15:57:00Z", four, workload={**WORKLOAD, "mode": "openai"})
    runs = [older, newer, through_door, longer, other_release, other_level, other_mode]
    assert baseline(runs, now, "r1") == newer
    assert baseline(runs, now, "r9") is None


def test_a_release_slower_past_the_thresholds_fails_the_gate_naming_each_figure():
    fast = run("r1", "2026-12-02T15:00:00Z", fixture_level("fast_c4.json", 4))
    slow = run("r2", "2026-12-02T16:00:00Z", fixture_level("slow_c4.json", 4))
    found = verdict(slow, GATE, "r1", fast)
    assert not found.passed and (found.release, found.previous) == ("r2", "r1")
    throughput = found.comparison.change(4, "output_tokens_per_s")
    ttft = found.comparison.change(4, "ttft_p99_ms")
    assert found.reasons == (
        f"output tokens/s at concurrency 4 fell to {throughput.now:,.1f} from {throughput.before:,.1f} "
        f"({throughput.ratio:.2f}x; tritonops_bench_gate_throughput allows a drop of 10%)",
        f"TTFT p99 at concurrency 4 rose to {ttft.now:,.1f} ms from {ttft.before:,.1f} ms "
        f"({ttft.ratio:.2f}x; tritonops_bench_gate_ttft_p99 allows a rise of 25%)")
    assert found.line == "; ".join(found.reasons)
    # only the gate's two figures count: the same pair passes with thresholds past what changed
    loose = replace(GATE, throughput_drop=0.99, ttft_p99_rise=1000.0)
    passed = verdict(slow, loose, "r1", fast)
    assert passed.passed and passed.reasons == () and passed.comparison.regressions  # e2e and others got worse
    assert passed.line == (f"against release r1: output tokens/s {throughput.ratio:.2f}x at concurrency 4, "
                           f"TTFT p99 {ttft.ratio:.2f}x at concurrency 4")
    assert verdict(fast, GATE, "r1", fast).passed


def test_with_nothing_to_compare_the_gate_passes_and_says_why_unless_a_request_failed():
    level = fixture_level("fast_c4.json", 4)
    now = run("r2", "2026-12-02T16:00:00Z", level)
    first = verdict(now, GATE, "r1", None)
    assert first.passed and first.comparison is None
    assert first.line == ("nothing to compare with (no run of release r1 kept like this one (model vllm_model, 16/32 "
                          "tokens, concurrency 4, through the replicas)): this run is kept for the next deploy's gate")
    assert "no earlier release on these hosts" in verdict(now, GATE, None, None).line
    broken = run("r2", "2026-12-02T16:00:00Z", LevelResult(4, 6, 2, dict(level.figures)))
    failed = verdict(broken, GATE, None, None)
    assert not failed.passed and failed.reasons == ("2 of 8 requests failed at concurrency 4",)


def test_a_run_whose_replica_was_killed_mid_level_fails_the_gate_on_its_failed_requests():
    """aiperf's own export of a level during which the only replica behind the door was killed (kill -9 of Triton,
    tests/fixtures/aiperf/README.md): its failed requests are read from it, and the gate rolls back on them
    whatever the figures of the requests that did answer."""
    level = fixture_level("killed_c4.json", 4)
    assert (level.requests_ok, level.requests_failed) == (20, 44)
    assert [error.split(" x ", 1)[0] for error in level.errors] == ["1", "3", "4", "36"]
    assert any("no_replica" in error for error in level.errors) and any("Server disconnected" in e for e in level.errors)
    workload = {**WORKLOAD, "output_tokens": 64, "requests": {"4": 64}}
    now = run("r2", "2026-12-07T01:07:28Z", level, through="balancer", workload=workload)
    alone = verdict(now, GATE, None, None)
    assert not alone.passed and alone.reasons == ("44 of 64 requests failed at concurrency 4",)
    loose = replace(GATE, throughput_drop=0.99, ttft_p99_rise=1000.0)  # no threshold lets a failed request pass
    assert not verdict(now, loose, None, None).passed
