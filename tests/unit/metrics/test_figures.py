"""Per-model figures from Triton's :8002 page: counts, average times per request, the engine's gauges;
on the real H200 pages (Triton 2.51 + vLLM 0.25 through tritonops' backend) and on made-up ones."""

from pathlib import Path

import pytest

from tests.support.paths import FIXTURES
from tritonops.metrics.exposition import parse_exposition
from tritonops.metrics.figures import MetricsPageError, ModelFigures, host_figures, model_figures
from tritonops.serving.verdict import kv_cache_tokens

REAL = FIXTURES / "real"


def test_the_real_qwen05_page():
    figures = host_figures((REAL / "h200-serve-qwen05" / "metrics.txt").read_text())
    # 2 requests; request 1187 us, queue 219, compute input 215 / infer 734 / output 8 (÷ 2 inferences)
    assert figures.models == (ModelFigures(
        "qwen05", requests=2, failures=0, inferences=2, executions=2, pending=0,
        average_ms={"request": 0.594, "queue": 0.11, "compute_input": 0.107, "compute_infer": 0.367,
                    "compute_output": 0.004},
        kv_cache_usage=None, running=0, waiting=0),)
    assert figures.engine_metrics


def test_the_real_qwen7b_page():
    (model,) = host_figures((REAL / "h200-serve-qwen7b" / "metrics.txt").read_text()).models
    assert (model.model, model.requests, model.inferences) == ("qwen7b", 2, 2)
    assert model.average_ms == {"request": 0.683,  # 1367 us / 2, rounded to the us
                                "queue": 0.111, "compute_input": 0.091, "compute_infer": 0.468,
                                "compute_output": 0.006}


def test_a_model_without_requests_has_counts_but_no_averages():
    figures = host_figures((REAL / "h200-serve-two-models" / "metrics.txt").read_text())
    by_name = {model.model: model for model in figures.models}
    assert set(by_name) == {"qwen05", "qwen7b"}
    assert (by_name["qwen7b"].requests, by_name["qwen7b"].average_ms) == (0, {})
    assert by_name["qwen05"].requests == 2


def test_versions_summed_failures_over_reasons_compute_per_inference_and_engine_gauges():
    page = parse_exposition("\n".join([
        'nv_inference_request_success{model="m",version="1"} 3',
        'nv_inference_request_success{model="m",version="2"} 1',
        'nv_inference_request_failure{model="m",reason="BACKEND",version="1"} 2',
        'nv_inference_request_failure{model="m",reason="REJECTED",version="1"} 1',
        'nv_inference_count{model="m",version="1"} 8',   # batches: 8 inferences for 4 requests
        'nv_inference_request_duration_us{model="m",version="1"} 40000',
        'nv_inference_queue_duration_us{model="m",version="1"} 4000',
        'nv_inference_compute_infer_duration_us{model="m",version="1"} 16000',
        'vllm:kv_cache_usage_perc{model="m",version="1"} 0.25',
        'vllm:gpu_cache_usage_perc{model="m",version="2"} 0.5',
        'vllm:num_requests_running{model="m",version="1"} 2',
        'vllm:num_requests_running{model="m",version="2"} 1',
        'vllm:num_requests_waiting{model="m",version="1"} 4',
        'vllm:num_requests_waiting{model_name="other"} 6',   # vLLM's own label name
    ]))
    assert model_figures(page) == {
        "m": ModelFigures("m", requests=4, failures=3, inferences=8, executions=0, pending=None,
                          average_ms={"request": 10.0, "queue": 1.0, "compute_infer": 2.0},
                          kv_cache_usage=0.5, running=3, waiting=4),
        "other": ModelFigures("other", waiting=6),
    }


@pytest.mark.parametrize("text, why", [
    ("<html><body>502 Bad Gateway</body></html>", "not Prometheus text: line 1"),
    ("hello world this is not metrics\n", "not Prometheus text: line 1"),
    ("# HELP go_goroutines x\ngo_goroutines 12\n", "no Triton metrics"),
    ("", "no Triton metrics"),
])
def test_a_page_that_is_not_tritons_metrics_is_refused_with_why(text, why):
    with pytest.raises(MetricsPageError, match=why):
        host_figures(text)


def _sampled(folder: Path) -> list[ModelFigures]:
    """Each half-second sample bench/real_gpu_kv_sampler.py took of :8002 while the engine was busy."""
    blocks = (folder / "kv-samples.txt").read_text().split("--- t=")[1:]
    figures = []
    for block in blocks:
        lines = [line for line in block.splitlines()[1:] if line.startswith("vllm:")]
        (model,) = model_figures(parse_exposition("\n".join(lines))).values()
        figures.append(model)
    return figures


@pytest.mark.parametrize("name", ["qwen05", "qwen7b"])
def test_the_backends_kv_gauge_on_the_real_engine_follows_the_tokens_held(name):
    """tritonops' backend feeds vllm:kv_cache_usage_perc from vLLM 0.25's own stat logger: on the H200,
    with 17 requests generating (16 of 2048 tokens, the gate's of 3000), it rises sample by sample, as
    a fraction (not a percent) of the cache vLLM reported, never more than the requests can hold; the
    page after they all ended reads 0, and `tritonops metrics` shows it."""
    folder = REAL / f"h200-kv-{name}"
    capacity = kv_cache_tokens((folder / "tritonserver.log").read_text())  # what the gate reads
    busy = [model for model in _sampled(folder) if model.running == 17]
    assert len(busy) >= 8
    usage = [model.kv_cache_usage for model in busy]
    assert all(later > earlier for earlier, later in zip(usage, usage[1:])), usage
    assert 0 < usage[0]
    held_per_request = usage[-1] * capacity / 17
    assert 500 < held_per_request <= 3000 + 16  # tokens: the longest request plus at most one block of the prompt
    (after,) = host_figures((folder / "metrics.txt").read_text()).models
    assert (after.model, after.kv_cache_usage, after.running, after.requests) == (name, 0.0, 0, 18)
