"""The gate's reading of logs captured on a real H200 (tests/fixtures/real/h200-serve-*): vLLM 0.25's
KV-cache line parsed and held against tritonops' plan, nothing in a healthy start read as a failure,
and the answers the gate checks for."""

import json
from pathlib import Path

import pytest

from tritonops.serving.status import parse_metrics
from tritonops.serving.verdict import classify, kv_cache_tokens

REAL = Path(__file__).parent / "fixtures" / "real"


@pytest.mark.parametrize("model, reported", [("qwen05", 11_057_680), ("qwen7b", 2_115_440)])
def test_vllm_kv_line_is_read_and_the_plan_never_over_promises(model, reported):
    folder = REAL / f"h200-serve-{model}"
    log = (folder / "tritonserver.log").read_text()
    assert kv_cache_tokens(log) == reported
    predicted = json.loads((folder / "plan.json").read_text())["kv_cache_tokens"]
    assert predicted <= reported and predicted / reported > 0.9  # within 10 %, on the safe side


@pytest.mark.parametrize("model", ["qwen05", "qwen7b"])
def test_a_healthy_real_start_is_not_classified_as_a_failure(model):
    assert classify((REAL / f"h200-serve-{model}" / "tritonserver.log").read_text()) is None


@pytest.mark.parametrize("model", ["qwen05", "qwen7b"])
def test_the_real_answers_and_metrics(model):
    folder = REAL / f"h200-serve-{model}"
    responses = (folder / "responses.txt").read_text()
    assert '"text_output"' in responses
    metrics = parse_metrics((folder / "metrics.txt").read_text())
    assert metrics[model].requests == 2 and metrics[model].average_ms["request"] > 0
    assert "vllm:generation_tokens_total" in (folder / "metrics.txt").read_text()


def test_two_engines_started_together_each_report_their_own_kv_line():
    log = (REAL / "h200-serve-two-models" / "tritonserver.log").read_text()
    assert "GPU KV cache size: 9,531,600 tokens" in log and "GPU KV cache size: 44,688 tokens" in log
