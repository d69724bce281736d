"""`tritonops bench` as data (bench/plan.py, bench/results.py): which endpoints, aiperf's command line,
the summary read from aiperf's real JSON export (tests/fixtures/aiperf/, captured from the lab: see its README),
the comparison of two releases and its thresholds."""

from __future__ import annotations

import json

import pytest

from tests.support import paths
from tests.support.bench import Host, fixture_level, summary
from tests.support.serve_records import serve_record
from tritonops.errors import InputError, TritonopsError
from tritonops.metrics.figures import ModelFigures
from tritonops.bench.plan import (KSERVE_TEMPLATE, Workload, aiperf_argv, check_workload, door_endpoints,
                                      parse_levels, release_key, replica_endpoints)
from tritonops.bench.results import (ServerTimes, compare, level_from_aiperf, previous_run,
                                              server_times, summary_from_json, workload_said)

FIXTURES = paths.FIXTURES / "aiperf"


def test_concurrency_levels_are_whole_numbers_each_given_once():
    assert parse_levels("1,8, 32,128") == (1, 8, 32, 128)
    for bad in ("0", "1,x", "1,,2", "5000", "-1"):
        with pytest.raises(InputError, match="whole numbers"):
            parse_levels(bad)
    with pytest.raises(InputError, match="given twice"):
        parse_levels("8,8")


def test_a_workload_is_bounded_by_a_count_or_a_duration_never_both():
    check_workload(Workload("m", requests=10))
    with pytest.raises(InputError, match="not both"):
        check_workload(Workload("m", requests=10, duration_s=30))
    with pytest.raises(InputError) as err:
        check_workload(Workload("m", output_tokens=0))
    assert err.value.where == "--output-tokens"
    check_workload(Workload("m", mode="openai"))
    with pytest.raises(InputError, match="not a serving mode"):
        check_workload(Workload("m", mode="grpc"))
    # the default count grows with the concurrency; the time bound follows it
    assert [Workload("m").requests_at(c) for c in (1, 8, 128)] == [16, 64, 1024]
    assert Workload("m", duration_s=60).time_bound_s(8) == 60 + 30 + 60


def test_a_balancers_door_is_reached_at_its_door_address_with_its_keys_file():
    door = Host("door-1", ("tritonops_balancers",), {"tritonops_deployment": "chat", "ansible_host": "10.0.0.9",
                                                     "tritonops_door_http_port": 9000,
                                                     "tritonops_door_address": "door.example.com",
                                                     "tritonops_api_keys_file": "/etc/tritonops/chat.keys"})
    other = Host("door-2", ("tritonops_balancers",), {"tritonops_deployment": "other", "ansible_host": "10.0.0.8"})
    plain = Host("door-3", ("tritonops_balancers",), {"tritonops_deployment": "chat", "ansible_host": "10.0.0.7"})
    found = door_endpoints([door, other, plain], "chat")
    assert [(e.name, e.url, e.keys_file) for e in found] == [
        ("door-1", "http://door.example.com:9000", "/etc/tritonops/chat.keys"), ("door-3", "http://10.0.0.7:8000", None)]


def test_replicas_are_reached_where_the_balancer_reaches_them_at_the_ports_their_release_recorded():
    host = Host("s1", (), {"ansible_host": "127.0.0.1", "tritonops_replica_address": "172.18.0.4"})
    replicas = [{"index": 0, "gpus": [0], "ports": [18300, 18301, 18302]},
                {"index": 1, "gpus": [1], "ports": [18310, 18311, 18312]}]
    assert [(e.name, e.url) for e in replica_endpoints(host, serve_record(replicas=replicas), 8000)] == [
        ("s1-r0", "http://172.18.0.4:18300"), ("s1-r1", "http://172.18.0.4:18310")]
    assert [e.url for e in replica_endpoints(Host("s2", (), {"ansible_host": "fd00::2"}), None, 8000)] == [
        "http://[fd00::2]:8000"]
    # in the openai mode a release records [http, grpc, openai]: requests go to the OpenAI frontend's port
    assert [e.url for e in replica_endpoints(host, serve_record(replicas=replicas, frontend="openai"), 8000)] == [
        "http://172.18.0.4:18302", "http://172.18.0.4:18312"]


def test_a_bench_is_filed_under_the_release_every_host_runs():
    assert release_key({"s1": "r2", "s2": "r2"}) == "r2"
    assert release_key({"s1": "r2", "s2": "r1", "s3": None}) == "r1+r2"
    with pytest.raises(InputError, match="deploy first"):
        release_key({"s1": None})


def test_aiperfs_command_line_drives_kserve_generate_stream_through_its_template_endpoint():
    argv = aiperf_argv(["/venv/bin/python", "/launch.py"], ["http://10.0.0.9:9000"],
                       Workload("vllm_model", input_tokens=16, output_tokens=32, requests=8), 4, "/tok",
                       "/run/kserve_payload.json.j2", "/run/c4")
    assert argv == [
        "/venv/bin/python", "/launch.py", "profile", "--model", "vllm_model", "--tokenizer", "/tok",
        "--url", "http://10.0.0.9:9000", "--endpoint-type", "template",
        "--custom-endpoint", "/v2/models/vllm_model/generate_stream", "--streaming",
        "--extra-inputs", "payload_template:/run/kserve_payload.json.j2", "--extra-inputs", "response_field:text_output",
        "--concurrency", "4", "--request-count", "8", "--request-timeout-seconds", "300",
        "--prompt-input-tokens-mean", "16", "--prompt-input-tokens-stddev", "0",
        "--prompt-output-tokens-mean", "32", "--prompt-output-tokens-stddev", "0", "--random-seed", "0",
        "--output-artifact-dir", "/run/c4", "--export-level", "records", "--no-auto-plot", "--ui-type", "none",
        "--no-server-metrics", "--no-gpu-telemetry"]
    timed = aiperf_argv(["aiperf"], ["http://a:1", "http://b:2"], Workload("m", duration_s=30, request_rate=2.5),
                        8, "/tok", "/t.j2", "/out")
    assert timed[timed.index("--url"):timed.index("--url") + 4] == ["--url", "http://a:1", "--url", "http://b:2"]
    assert "--request-count" not in timed
    assert timed[timed.index("--benchmark-duration"):][:4] == ["--benchmark-duration", "30",
                                                               "--benchmark-grace-period", "30"]
    assert timed[timed.index("--request-rate"):][:4] == ["--request-rate", "2.5", "--arrival-pattern", "constant"]
    with pytest.raises(InputError, match="absolute"):
        aiperf_argv(["aiperf"], ["http://a:1"], Workload("m"), 1, "tok", "/t.j2", "/out")


def test_in_the_openai_mode_aiperf_streams_chat_completions():
    argv = aiperf_argv(["aiperf"], ["http://10.0.0.9:9000"], Workload("vllm_model", requests=8, mode="openai"), 4,
                       "/tok", "/run/kserve_payload.json.j2", "/run/c4")
    assert argv[:10] == ["aiperf", "profile", "--model", "vllm_model", "--tokenizer", "/tok",
                         "--url", "http://10.0.0.9:9000", "--endpoint-type", "chat"]
    assert argv[10] == "--streaming" and "--custom-endpoint" not in argv and "--extra-inputs" not in argv


def test_the_kserve_payload_template_renders_the_body_triton_streams():
    import jinja2

    body = jinja2.Environment(autoescape=True).from_string(KSERVE_TEMPLATE).render(
        text='say "hi" <now>', max_tokens=32, stream=True)
    assert json.loads(body) == {"text_input": 'say "hi" <now>',
                                "parameters": {"max_tokens": 32, "stream": True, "ignore_eos": True}}


def test_a_level_is_read_from_aiperfs_real_json_export():
    level = fixture_level("fast_c1.json", 1)
    assert (level.concurrency, level.requests_ok, level.requests_failed) == (1, 8, 0)
    expected = json.loads((FIXTURES / "fast_c1.json").read_text())
    assert level.figures == {
        "output_tokens_per_s": expected["output_token_throughput"]["avg"],
        "requests_per_s": expected["request_throughput"]["avg"],
        "ttft_p50_ms": expected["time_to_first_token"]["p50"], "ttft_p99_ms": expected["time_to_first_token"]["p99"],
        "itl_p50_ms": expected["inter_token_latency"]["p50"], "itl_p99_ms": expected["inter_token_latency"]["p99"],
        "e2e_p50_ms": expected["request_latency"]["p50"], "e2e_p99_ms": expected["request_latency"]["p99"]}
    assert expected["time_to_first_token"]["unit"] == "ms" and expected["inter_token_latency"]["unit"] == "ms"
    with pytest.raises(TritonopsError, match="not aiperf"):
        level_from_aiperf(1, "{}")
    with pytest.raises(TritonopsError, match="cannot be read"):
        level_from_aiperf(1, "not json")


def test_server_times_are_the_differences_over_the_level_not_the_averages_since_start():
    before = [ModelFigures("m", requests=100, inferences=100, average_ms={"queue": 2.0, "compute_infer": 10.0}),
              ModelFigures("other", requests=5, inferences=5, average_ms={"queue": 50.0})]
    after = [ModelFigures("m", requests=110, inferences=110,
                          average_ms={"queue": (200 + 10 * 7.0) / 110, "compute_infer": (1000 + 10 * 4.0) / 110})]
    assert server_times(before, after, "m") == ServerTimes(10, 7.0, 4.0)
    assert server_times(before, before, "m") is None  # nothing finished in between
    assert server_times([], after, "m") is None


def test_a_slower_release_is_flagged_where_it_got_worse_and_nowhere_else():
    fast = summary("r1", "2026-12-02T15:00:00Z", [fixture_level("fast_c1.json", 1), fixture_level("fast_c4.json", 4)])
    slow = summary("r2", "2026-12-02T15:10:00Z", [fixture_level("slow_c1.json", 1), fixture_level("slow_c4.json", 4)])
    found = compare(slow, fast, threshold=0.10)
    worse = {(c.concurrency, c.figure) for c in found.regressions}
    # one request at a time (max_num_seqs 1): four streams wait their turn, so TTFT and end-to-end grow and the
    # tokens per second stay those of one stream; a single stream is as fast as before
    assert {(4, "output_tokens_per_s"), (4, "requests_per_s"), (4, "ttft_p50_ms"), (4, "ttft_p99_ms"),
            (4, "e2e_p50_ms"), (4, "e2e_p99_ms")} <= worse
    assert not {f for c, f in worse if c == 1} & {"output_tokens_per_s", "itl_p50_ms", "e2e_p50_ms"}
    throughput = found.change(4, "output_tokens_per_s")
    assert throughput.ratio < 0.5 and throughput.before == fast.level(4).figure("output_tokens_per_s")
    assert not compare(fast, fast).regressions
    # a looser threshold per figure lets a figure through
    assert (4, "ttft_p99_ms") not in {(c.concurrency, c.figure)
                                      for c in compare(slow, fast, thresholds={"ttft_p99_ms": 100.0}).regressions}


def test_the_previous_run_is_the_newest_comparable_one_of_another_release():
    level1, level4 = fixture_level("fast_c1.json", 1), fixture_level("fast_c4.json", 4)
    first = summary("r1", "2026-12-02T15:00:00Z", [level1, level4])
    direct = summary("r1", "2026-12-02T15:05:00Z", [level1], through="replicas")
    again = summary("r1", "2026-12-02T15:06:00Z", [level1, level4])
    now = summary("r2", "2026-12-02T15:10:00Z", [level1, level4])
    assert previous_run([first, direct, again], now) is again
    assert previous_run([first, direct], summary("r2", "x", [level4], through="replicas")) is None  # no level shared
    assert previous_run([first, direct, again, now], now, "r1") is again
    assert previous_run([now], now) is None
    # another workload is another measurement (issue #45 item 5: a 16/32-token run flagged against a 128/128 one)
    short = summary("r1", "2026-12-02T15:07:00Z", [level1, level4], tokens=(16, 32))
    assert previous_run([first, short], now) is first and previous_run([short], now) is None
    assert workload_said(short) == "vllm_model through balancer, 16 tokens in / 32 out"


def test_a_kept_summary_reads_back_as_it_was_written():
    kept = summary("r1", "2026-12-02T15:00:00Z", [level_from_aiperf(1, (FIXTURES / "fast_c1.json").read_text(),
                                                                     ServerTimes(8, 0.05, 0.9))])
    assert summary_from_json(json.loads(json.dumps(kept.to_json()))) == kept
    with pytest.raises(TritonopsError, match="not a tritonops bench summary"):
        summary_from_json({"levels": []})


def test_the_shared_prefix_workload_asks_aiperf_for_its_tenants_prefixes_before_each_prompt():
    """Issue #44: --workload shared-prefix --tenants P --prefix-tokens L: aiperf's own prefix prompts (a pool of P,
    L tokens each, one picked per request before its --input-tokens); both or neither."""
    argv = aiperf_argv(["aiperf"], ["http://a:1"], Workload("m", input_tokens=64, tenants=12, prefix_tokens=2048), 8,
                       "/tok", "/t.j2", "/out")
    assert argv[argv.index("--num-prefix-prompts"):][:4] == ["--num-prefix-prompts", "12", "--prefix-prompt-length",
                                                             "2048"]
    assert argv[argv.index("--prompt-input-tokens-mean") + 1] == "64"
    assert "--num-prefix-prompts" not in aiperf_argv(["aiperf"], ["http://a:1"], Workload("m"), 8, "/tok", "/t.j2",
                                                     "/out")
    with pytest.raises(InputError, match="needs both") as refused:
        check_workload(Workload("m", tenants=12))
    assert refused.value.where == "--prefix-tokens"
    with pytest.raises(InputError, match="not between 1 and 100,000"):
        check_workload(Workload("m", tenants=-1, prefix_tokens=-1))


def test_a_levels_prefix_cache_hit_rate_is_its_hits_over_its_lookups_not_since_start():
    before = [ModelFigures("m", requests=100, inferences=100, prefix_queries=10_000, prefix_hits=1_000)]
    after = [ModelFigures("m", requests=110, inferences=110, prefix_queries=12_000, prefix_hits=2_500)]
    assert server_times(before, after, "m").prefix_hit_rate == 0.75
    plain = [ModelFigures("m", requests=120, inferences=120)]
    assert server_times(plain, plain[:0] + [ModelFigures("m", requests=130, inferences=130)], "m").prefix_hit_rate \
        is None
