"""Per model, the figures users work out by hand from Triton's :8002/metrics. Pure.

Counts and cumulative times are summed over a model's versions. Average times per request, in ms:
  request, queue          nv_inference_{request,queue}_duration_us ÷ nv_inference_request_success
                          (both count successful requests, cached ones included)
  compute_input/infer/output  nv_inference_compute_*_duration_us ÷ nv_inference_count
                          (both leave cached requests out; a request carrying a batch of n counts n)
Where the engine reports them (NVIDIA's vLLM backend with REPORT_CUSTOM_METRICS): KV-cache usage
(`vllm:kv_cache_usage_perc`, older `vllm:gpu_cache_usage_perc`, a fraction 0..1; the highest of the
model's engines) and requests running / waiting (`vllm:num_requests_running` / `_waiting`, summed); with tritonops'
backend, the prefix cache's hit rate (`vllm:prefix_cache_hits_total` ÷ `vllm:prefix_cache_queries_total`, in
tokens), the host's and, where it has several replicas, each one's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tritonops.metrics.exposition import Exposition, parse_exposition

PER_REQUEST = {"request": "nv_inference_request_duration_us", "queue": "nv_inference_queue_duration_us"}
PER_INFERENCE = {"compute_input": "nv_inference_compute_input_duration_us",
                 "compute_infer": "nv_inference_compute_infer_duration_us",
                 "compute_output": "nv_inference_compute_output_duration_us"}
TIMES = tuple(PER_REQUEST) + tuple(PER_INFERENCE)  # the order they are shown in
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
RUNNING, WAITING = "vllm:num_requests_running", "vllm:num_requests_waiting"
PREFIX_QUERIES, PREFIX_HITS = "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"


def hit_rate(hits: float, queries: float) -> float | None:
    """The prefix cache's hit rate from its counts (tokens found / tokens looked up); None when nothing was looked up."""
    return round(hits / queries, 4) if queries > 0 else None
_COUNTS = ("nv_inference_request_success", "nv_inference_request_failure", "nv_inference_count",
           "nv_inference_exec_count", "nv_inference_pending_request_count")


class MetricsPageError(ValueError):
    """The page is not Triton's metrics (not the text format, or no nv_* family at all)."""


@dataclass(frozen=True)
class ModelFigures:
    model: str
    requests: int = 0          # successful
    failures: int = 0          # every failure reason
    inferences: int = 0
    executions: int = 0
    pending: int | None = None
    average_ms: dict[str, float] = field(default_factory=dict)  # TIMES present with a non-zero divisor
    kv_cache_usage: float | None = None   # 0..1
    running: int | None = None
    waiting: int | None = None
    prefix_hit_rate: float | None = None  # tokens found in vLLM's prefix cache / tokens looked up (None: not reported)
    replica_hit_rates: tuple[float | None, ...] = ()  # each replica's, in the order of its pages (several only)
    prefix_queries: int = 0    # the counts behind prefix_hit_rate, since the replicas started (tokens)
    prefix_hits: int = 0


@dataclass(frozen=True)
class HostFigures:
    models: tuple[ModelFigures, ...]
    engine_metrics: bool       # vllm:* families on the page


def model_figures(page: Exposition) -> dict[str, ModelFigures]:
    """Every model with an nv_inference_* or vllm:* sample, by name."""
    sums: dict[str, dict[str, float]] = {}
    gauges: dict[str, dict[str, list[float]]] = {}
    for sample in page.samples:
        model = sample.label("model") or sample.label("model_name")
        if model is None:
            continue
        if sample.name.startswith("nv_inference_") or sample.name in (PREFIX_QUERIES, PREFIX_HITS):
            found = sums.setdefault(model, {})
            found[sample.name] = found.get(sample.name, 0.0) + sample.value
        elif sample.name in (*KV_USAGE, RUNNING, WAITING):
            gauges.setdefault(model, {}).setdefault(sample.name, []).append(sample.value)
    return {model: _figures(model, sums.get(model, {}), gauges.get(model, {}))
            for model in sorted(set(sums) | set(gauges))}


def _figures(model: str, sums: dict[str, float], gauges: dict[str, list[float]]) -> ModelFigures:
    requests, failures, inferences, executions, pending = (sums.get(name) for name in _COUNTS)
    averages = {}
    for names, divisor in ((PER_REQUEST, requests), (PER_INFERENCE, inferences)):
        for name, metric in names.items():
            if divisor and metric in sums:
                averages[name] = round(sums[metric] / divisor / 1000.0, 3)
    usage = [value for name in KV_USAGE for value in gauges.get(name, ())]
    queries = sums.get(PREFIX_QUERIES, 0.0)
    return ModelFigures(model, int(requests or 0), int(failures or 0), int(inferences or 0), int(executions or 0),
                        None if pending is None else int(pending), averages,
                        max(usage) if usage else None, _total(gauges.get(RUNNING)), _total(gauges.get(WAITING)),
                        hit_rate(sums.get(PREFIX_HITS, 0.0), queries), (), int(queries), int(sums.get(PREFIX_HITS, 0)))


def _total(values: list[float] | None) -> int | None:
    return None if values is None else int(sum(values))


def host_figures(text: str | list[str]) -> HostFigures:
    """A whole :8002/metrics page -> figures; MetricsPageError when it is not Triton's metrics. Several pages
    (a host's replicas, issue #22) are one host: their counters and times add up, KV-cache usage is the
    highest, running and waiting requests add up."""
    pages = [parse_exposition(one) for one in text] if isinstance(text, list) else []
    if pages:
        page = Exposition(tuple(sample for one in pages for sample in one.samples),
                          {k: v for one in pages for k, v in one.types.items()},
                          tuple(error for one in pages for error in one.errors))
    else:
        page = parse_exposition(text)
    if page.errors:
        more = f" (and {len(page.errors) - 1} more)" if len(page.errors) > 1 else ""
        raise MetricsPageError(f"not Prometheus text: {page.errors[0]}{more}")
    if not any(sample.name.startswith("nv_") for sample in page.samples):
        raise MetricsPageError(f"no Triton metrics (nv_*) among its {len(page.samples)} samples")
    models = model_figures(page)
    if len(pages) > 1:  # each replica's hit rate beside the host's
        each = [model_figures(one) for one in pages]
        models = {name: replace(figures, replica_hit_rates=tuple(
            one[name].prefix_hit_rate if name in one else None for one in each))
            if any(name in one and one[name].prefix_hit_rate is not None for one in each) else figures
            for name, figures in models.items()}
    return HostFigures(tuple(models.values()), any(sample.name.startswith("vllm:") for sample in page.samples))
