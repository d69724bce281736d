"""`tritonops bench` on the lab (issue #24): the test lab's full host (real Triton, the lab engine streaming at its
configured 200 tokens/s after a 20 ms first-token delay) behind the door lab's balancer (Debian's HAProxy, the door
of tests/lab/test_door_lab.py). aiperf runs for real from its own venv (scripts/install-aiperf.sh), a few requests
a level: its inter-token latency at concurrency 1 is the engine's 5 ms, its TTFT the engine's 20 ms plus what the
door and Triton add; a second release whose engine takes one request at a time (max_num_seqs 1) is flagged against
the first; errors are one line with the other commands' exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.lab.test_door_lab import door_inventory, lab_address
from tests.support.balancer_lab import BALANCER
from tests.lab.test_serve_lab import cli
from tritonops.lab.testing import FULL_2080TI

DEPLOYMENT = "dep-bench"
ROOT = "/opt/tritonops"
DOOR_HTTP, DOOR_GRPC = 18380, 18381
KEYS = "/etc/tritonops/dep-bench.keys"
ENGINE_ITL_MS = 1000 / 200   # the lab engine's default TRITONOPS_LAB_TOKENS_PER_S
ENGINE_TTFT_MS = 20          # its default TRITONOPS_LAB_TTFT_S
SMALL = ("--input-tokens", "16", "--output-tokens", "32", "--requests", "8")


@pytest.fixture(scope="module")
def inventory(lab, balancer, tmp_path_factory):  # noqa: F811
    return door_inventory(lab, balancer, tmp_path_factory.mktemp("bench") / "hosts.yml", DEPLOYMENT,
                          (18300, 18301, 18302), (DOOR_HTTP, DOOR_GRPC), KEYS,
                          tritonops_door_address=balancer.host(BALANCER).network_address)


@pytest.fixture(scope="module")
def deployed(lab, balancer, inventory, tmp_path_factory):  # noqa: F811
    """The first release deployed behind a fresh door; the bench root a fresh folder."""
    import subprocess

    def on(state, host, command):
        return subprocess.run(state.ssh_argv(host, command), capture_output=True, text=True, timeout=60)

    wipe = f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={DEPLOYMENT}) 2>/dev/null; " \
           f"rm -rf {ROOT}/{DEPLOYMENT}"
    on(lab, FULL_2080TI, wipe)
    on(balancer, BALANCER, "kill $(cat /run/haproxy-tritonops.pid) 2>/dev/null; sleep 0.5; "
                           "rm -rf /etc/haproxy/tritonops /etc/haproxy/tritonops.prev /etc/tritonops")
    root = tmp_path_factory.mktemp("bench-root")
    yield root
    on(lab, FULL_2080TI, wipe)


def streamed_gaps_ms(url: str, key: str | None = None, tokens: int = 32, rounds: int = 3) -> float:
    """The inter-token latency a plain client here sees at this moment, as aiperf counts it: per stream, the time
    from its first event to its last over the gaps between them (the stand-in paces tokens on a schedule from the
    first, so one late event followed by one early is still the engine's pace), the median of the streams."""
    import statistics
    import time
    import urllib.request

    gaps = []
    for _ in range(rounds):
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
        body = json.dumps({"text_input": "t1 t2 t3", "parameters": {"max_tokens": tokens, "stream": True,
                                                                     "ignore_eos": True}}).encode()
        request = urllib.request.Request(f"{url}/v2/models/vllm_model/generate_stream", data=body, headers=headers)
        seen = []
        with urllib.request.urlopen(request, timeout=60) as reply:
            for line in reply:
                if line.startswith(b"data:"):
                    seen.append(time.monotonic())
        gaps.append(1000 * (seen[-1] - seen[0]) / (len(seen) - 1))
    return statistics.median(gaps)


def assert_engine_pace(figures, url: str, key: str | None = None) -> None:
    """At concurrency 1 the inter-token latency is the engine's delay between tokens: within 10 % of what a plain
    streaming client measures at the same moment, and within 10 % of the configured 5 ms (the stand-in paces each
    token on a schedule from the first, so the work between tokens does not add to the delay).
    TTFT: the engine's 20 ms plus what the door and Triton add."""
    plain = streamed_gaps_ms(url, key)
    assert abs(figures["itl_p50_ms"] - plain) <= 0.1 * plain, (figures, plain)
    assert abs(figures["itl_p50_ms"] - ENGINE_ITL_MS) <= 0.1 * ENGINE_ITL_MS, figures
    assert ENGINE_TTFT_MS <= figures["ttft_p50_ms"] <= ENGINE_TTFT_MS + 40, figures


def door_key(balancer) -> str:  # noqa: F811
    import subprocess

    return subprocess.run(balancer.ssh_argv(BALANCER, f"cat {KEYS}"), capture_output=True, text=True,
                          timeout=60).stdout.strip()


def bench(capsys, monkeypatch, root, inventory, *argv):
    import jsonschema

    from tests.support.result_schema import SCHEMA
    from tritonops.cli.main import main

    monkeypatch.setenv("TRITONOPS_BENCH_DIR", str(root))
    code = main(["bench", "-i", str(inventory), *argv, "--json"])
    captured = capsys.readouterr()
    assert captured.out, captured.err
    found = json.loads(captured.out)
    jsonschema.validate(found, SCHEMA)
    return code, found


def with_host_vars(inventory, **host_vars) -> Path:
    """The inventory with `host_vars` added to s1's, in a file beside it."""
    data = yaml.safe_load(Path(inventory).read_text())
    data["all"]["hosts"]["s1"].update(host_vars)
    path = Path(inventory).with_name("changed.yml")
    path.write_text(yaml.safe_dump(data))
    return path


def deploy(capsys, inventory, **host_vars) -> None:
    code, report = cli(capsys, "deploy", "-i", str(with_host_vars(inventory, **host_vars)))
    assert code == 0, [r["msg"] for r in report["results"] if r["status"] == "failed"]


def wait_for_door(balancer, inventory) -> None:  # noqa: F811
    """Until the door sends a readiness request with its key on to a replica that answers 200 (its first health
    checks, every 2 s, rise 2): a 401 only says the door is there, not that a replica is UP behind it."""
    import subprocess
    import time
    import urllib.error
    import urllib.request

    data = yaml.safe_load(Path(inventory).read_text())
    door = data["all"]["children"]["tritonops_balancers"]["hosts"]["door-1"]
    key = subprocess.run(balancer.ssh_argv(BALANCER, f"cat {KEYS}"), capture_output=True, text=True,
                         timeout=60).stdout.strip().splitlines()[0]
    request = urllib.request.Request(f"http://{door['tritonops_door_address']}:{DOOR_HTTP}/v2/models/vllm_model/ready",
                                     headers={"Authorization": f"Bearer {key}"})
    deadline, seen = time.monotonic() + 30, None
    while True:
        try:
            with urllib.request.urlopen(request, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError as err:
            seen = getattr(err, "code", None) or err
        assert time.monotonic() < deadline, f"the door never sent to a replica that answered (last: {seen})"
        time.sleep(0.5)


def test_a_bench_through_the_door_measures_the_lab_engines_pace_and_keeps_aiperfs_exports(
        capsys, monkeypatch, inventory, deployed, balancer):  # noqa: F811
    deploy(capsys, inventory)
    wait_for_door(balancer, inventory)
    code, report = bench(capsys, monkeypatch, deployed, inventory, "--concurrency", "1,4", *SMALL)
    assert code == 0, report
    summary = report["bench"]
    assert summary["through"] == "balancer" and summary["endpoints"] == ["door-1"]
    one, four = summary["levels"]
    assert (one["concurrency"], one["requests_ok"], one["requests_failed"]) == (1, 8, 0)
    assert (four["concurrency"], four["requests_ok"], four["requests_failed"]) == (4, 8, 0)
    figures = one["figures"]
    assert_engine_pace(figures, f"http://{balancer.host(BALANCER).network_address}:{DOOR_HTTP}", door_key(balancer))
    # 32 tokens: the first after the TTFT, 31 more 5 ms apart; four streams at once make about four times as many
    assert figures["e2e_p50_ms"] >= ENGINE_TTFT_MS + 31 * ENGINE_ITL_MS
    assert four["figures"]["output_tokens_per_s"] > 2.5 * figures["output_tokens_per_s"], summary
    assert one["server"]["requests"] == 8 and one["server"]["queue_ms"] is not None
    kept = Path(report["kept"])
    assert kept.parent.parent == deployed / DEPLOYMENT and kept.parent.name == summary["release"]
    for name in ("profile_export_aiperf.json", "profile_export_aiperf.csv", "profile_export.jsonl"):
        assert (kept / "c1" / name).is_file(), sorted(p.name for p in (kept / "c1").iterdir())
    assert json.loads((kept / "summary.json").read_text())["levels"][0]["requests_ok"] == 8
    records = (kept / "c4" / "profile_export.jsonl").read_text().splitlines()
    assert len(records) == 8
    # the door's key reached aiperf (every request answered), never its exports
    assert all("Bearer" not in p.read_text(errors="replace") for p in kept.rglob("*.json*"))
    assert report["comparison"] is None  # the first release benched: nothing to compare with


def test_a_bench_direct_to_the_replicas_skips_the_door(capsys, monkeypatch, inventory, deployed, lab):
    code, report = bench(capsys, monkeypatch, deployed, inventory, "--through", "replicas", "--concurrency", "1",
                         "--no-plots", *SMALL)
    assert code == 0, report
    summary = report["bench"]
    assert summary["through"] == "replicas" and summary["endpoints"] == ["s1-r0"]
    assert_engine_pace(summary["levels"][0]["figures"], f"http://{lab_address(lab, FULL_2080TI)}:18300")
    # bounded in time instead: 2 s at 4 requests a second
    code, report = bench(capsys, monkeypatch, deployed, inventory, "--through", "replicas", "--concurrency", "2",
                         "--duration", "2", "--request-rate", "4", "--no-plots", "--input-tokens", "16",
                         "--output-tokens", "16")
    level = report["bench"]["levels"][0]
    assert code == 0 and 4 <= level["requests_ok"] <= 12 and level["requests_failed"] == 0, level


def test_the_tokenizer_is_fetched_once_from_the_weights_the_release_names(lab, inventory, deployed, tmp_path):
    from tritonops.bench import tokenizer
    from tritonops.inventory import load_inventory
    from tritonops.transport.pool import open_transport

    host = next(h for h in load_inventory([str(inventory)]).hosts if h.name == "s1")
    transport = open_transport(host.connection)
    try:
        found = transport.run(f"ls -d {ROOT}/{DEPLOYMENT}/models/*", timeout=30).stdout.split()
        fetched = tokenizer.fetched_copy(tmp_path, transport, "s1", found[0])
    finally:
        transport.close()
    local = Path(host.vars["tritonops_model"])
    assert (Path(fetched) / "tokenizer.json").read_bytes() == (local / "tokenizer.json").read_bytes()
    assert tokenizer.fetched_copy(tmp_path, None, "s1", found[0]) == fetched  # kept: no host needed again


def test_an_unreachable_door_and_a_model_that_does_not_exist_are_one_line_errors(capsys, monkeypatch, inventory,
                                                                                  deployed):
    from tritonops.cli.main import main

    monkeypatch.setenv("TRITONOPS_BENCH_DIR", str(deployed))
    data = yaml.safe_load(Path(inventory).read_text())
    data["all"]["children"]["tritonops_balancers"]["hosts"]["door-1"]["tritonops_door_address"] = "127.0.0.1"
    closed = Path(inventory).with_name("closed.yml")
    closed.write_text(yaml.safe_dump(data))
    assert main(["bench", "-i", str(closed), "--concurrency", "1", *SMALL]) == 4
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: door-1: http://127.0.0.1:18380 does not answer") and "\n" not in error, error
    assert main(["bench", "-i", str(inventory), "--model", "vllm_modle", "--concurrency", "1", *SMALL]) == 5
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "model 'vllm_modle' is not served by dep-bench (it serves: vllm_model)" in error, error
    assert "did you mean 'vllm_model'" in error and "\n" not in error


def test_compare_flags_a_release_whose_engine_takes_one_request_at_a_time(capsys, monkeypatch, inventory,
                                                                          deployed, balancer):  # noqa: F811
    deploy(capsys, inventory, tritonops_max_num_seqs=1)
    wait_for_door(balancer, inventory)
    code, report = bench(capsys, monkeypatch, deployed, inventory, "--concurrency", "1,4", *SMALL)
    assert code == 0, report
    comparison = report["comparison"]
    first = min(json.loads(p.read_text())["release"] for p in deployed.glob(f"{DEPLOYMENT}/*/*/summary.json"))
    assert comparison["against"] == first != report["bench"]["release"]
    worse = {(c["concurrency"], c["figure"]) for c in comparison["worse"]}
    assert {(4, "output_tokens_per_s"), (4, "ttft_p99_ms")} <= worse, comparison["worse"]
    assert not {figure for concurrency, figure in worse if concurrency == 1} & {"output_tokens_per_s",
                                                                                 "itl_p50_ms"}, worse
    plots = [Path(p) for p in report["plots"]]
    assert sorted(p.name for p in plots) == ["itl.png", "latency_throughput.png", "throughput.png", "ttft.png"]
    assert all(p.is_file() and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in plots)


GATE_VARS = {"tritonops_bench_gate_concurrency": "4", "tritonops_bench_gate_requests": 8,
             "tritonops_bench_gate_input_tokens": 16, "tritonops_bench_gate_output_tokens": 32}


def gated_deploy(capsys, inventory, **host_vars):
    return cli(capsys, "deploy", "-i", str(with_host_vars(inventory, **GATE_VARS, **host_vars)), "--bench-gate")


def current_release(lab) -> str:
    import subprocess

    return subprocess.run(lab.ssh_argv(FULL_2080TI, f"readlink {ROOT}/{DEPLOYMENT}/current"), capture_output=True,
                          text=True, timeout=60).stdout.strip().rstrip("/").rsplit("/", 1)[-1]


def test_the_bench_gate_sends_a_slower_first_batch_back_and_stops_the_rollout(capsys, monkeypatch, lab, inventory,
                                                                              deployed):
    monkeypatch.setenv("TRITONOPS_BENCH_DIR", str(deployed))
    # the first release again (four requests at once): its gate has no run of the one-at-a-time release measured
    # its way to compare with, so it passes, and its run is kept for the next deploy's gate
    code, first = gated_deploy(capsys, inventory)
    assert code == 0, [r["msg"] for r in first["results"] if r["status"] == "failed"]
    gate = first["bench_gate"]
    assert gate["passed"] and gate["hosts"] == ["s1"] and gate["said"].startswith("nothing to compare with"), gate
    fast = current_release(lab)
    assert gate["verdict"]["release"] == fast
    kept = json.loads((Path(gate["kept"]) / "summary.json").read_text())
    assert (kept["through"], kept["release"], kept["levels"][0]["concurrency"]) == ("replicas", fast, 4)
    assert kept["levels"][0]["requests_ok"] == 8

    # one request at a time: at four streams its tokens/s fall to about a quarter and TTFT p99 grows; the gate
    # sends s1 back to the release it served before and the rollout stops
    code, second = gated_deploy(capsys, inventory, tritonops_max_num_seqs=1)
    assert code == 2, second["results"]
    gate = second["bench_gate"]
    assert not gate["passed"] and gate["verdict"]["previous"] == fast, gate
    assert "output tokens/s at concurrency 4 fell to" in gate["said"] and "TTFT p99 at concurrency 4 rose" in gate["said"]
    assert gate["rolled_back"] == f"s1 back on {fast}", gate
    assert second["stopped"].startswith("bench gate on batch 1 of play 'Triton + vLLM on every GPU host': output")
    row = next(r for r in second["results"] if r["task"] == "bench gate")
    assert (row["host"], row["status"]) == ("s1", "failed") and gate["kept"] in row["msg"]
    assert any(r["task"].startswith("Triton serves the earlier release") and r["status"] == "changed"
               for r in second["results"]), [r["task"] for r in second["results"]]
    assert current_release(lab) == fast != gate["verdict"]["release"]
