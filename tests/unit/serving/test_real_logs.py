"""The gate's reading of logs captured on a real H200 (tests/fixtures/real/h200-serve-*): vLLM 0.25's
KV-cache line parsed and held against tritonops' plan, nothing in a healthy start read as a failure,
and the answers the gate checks for."""

import json
from dataclasses import replace

import pytest

from tests.support.paths import FIXTURES
from tritonops.facts.model import report_from_json
from tritonops.serving.status import parse_metrics
from tritonops.serving.verdict import classify, kv_cache_tokens
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_facts
from tritonops.sizing.model_source import load_model_dir

REAL = FIXTURES / "real"


# what the real runs' model.json added to the plan's engine arguments to start without weights
RUN_ONLY = {"model", "tokenizer", "load_format", "seed", "disable_log_stats"}
MODELS = {"qwen05": "Qwen2.5-0.5B-Instruct", "qwen7b": "Qwen2.5-7B-Instruct"}


def todays_plan(model: str):
    """What sizing predicts today for the real run's inputs (as bench/real_gpu_repo.py made them): the
    H200 probed on the real host, one GPU of it, the model's config.json, vLLM 0.25.0."""
    facts = report_from_json(json.loads((REAL / "h200x2" / "probe-local-idle.json").read_text())).hosts[0].facts
    gpus = replace(gpu_spec_from_facts(facts), count=1)
    spec = load_model_dir(FIXTURES / "models" / MODELS[model])
    return size_engine(spec, gpus, SizingRequest(model_ref="hf-config", vllm_version="0.25.0"))


@pytest.mark.parametrize("model, reported", [("qwen05", 11_057_680), ("qwen7b", 2_115_440)])
def test_vllm_kv_line_is_read_and_todays_plan_for_the_same_inputs_never_over_promises(model, reported):
    folder = REAL / f"h200-serve-{model}"
    assert kv_cache_tokens((folder / "tritonserver.log").read_text()) == reported
    plan = todays_plan(model)
    ran = {key: value for key, value in json.loads((folder / "model.json").read_text()).items() if key not in RUN_ONLY}
    assert {key: value for key, value in plan.model_json.items() if key != "model"} == ran  # the run is this plan's
    assert plan.kv_cache_tokens <= reported and plan.kv_cache_tokens / reported > 0.99  # within 1 %, on the safe side


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
