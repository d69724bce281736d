"""`tritonops metrics`' table: a row per host and model with the figures, a failed host as one row
with its problem (rendered, not mocked: the same results the command gets)."""

import io

from rich.console import Console

from tritonops.cli.cmd_metrics import _table
from tritonops.metrics.figures import HostFigures, ModelFigures
from tritonops.results import GroupResult, HostResult


def rendered(results) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(_table(GroupResult.of(results)))
    return out.getvalue()


def test_figures_per_model_and_a_failed_host_in_one_line():
    chat = ModelFigures("chat", requests=1234, failures=2, inferences=1234, average_ms={
        "queue": 0.11, "compute_input": 0.107, "compute_infer": 367.0, "compute_output": 0.004, "request": 412.25},
        kv_cache_usage=0.42, running=3, waiting=1, prefix_hit_rate=0.615, replica_hit_rates=(0.7, 0.53))
    idle = ModelFigures("embed")
    text = rendered([HostResult("gpu-01", "ok", "", HostFigures((chat, idle), True)),
                     HostResult("gpu-02", "failed", "metrics port 8002 closed (connection refused)")])
    rows = [" ".join(line.replace("│", " ").split()) for line in text.splitlines()]
    assert "gpu-01 chat 1,234 / 2 0.11 0.11 367.0 0.00 412.2 42% 3 / 1 62%" in rows
    assert "gpu-01 chat: prefix-cache hits per replica: r0 70%, r1 53%" in rows
    assert "embed 0 / 0 - - - - - - - -" in rows
    assert "gpu-02 failed: metrics port 8002 closed (connection refused)" in rows


def test_the_prefix_caches_hit_rate_is_the_hosts_and_each_replicas_from_their_pages():
    """Issue #44: the backend's vllm:prefix_cache_* counters (tokens) added over a host's replicas' pages, and each
    page's own rate beside it."""
    from tritonops.metrics.figures import host_figures

    def page(queries: int, hits: int) -> str:
        return ('nv_inference_request_success{model="chat",version="1"} 3\n'
                f'vllm:prefix_cache_queries_total{{model="chat",version="1"}} {queries}\n'
                f'vllm:prefix_cache_hits_total{{model="chat",version="1"}} {hits}\n')

    (chat,) = host_figures([page(1000, 700), page(3000, 1100)]).models
    assert (chat.prefix_hit_rate, chat.replica_hit_rates) == (0.45, (0.7, 0.3667))
    (one,) = host_figures(page(400, 100)).models
    assert (one.prefix_hit_rate, one.replica_hit_rates) == (0.25, ())
    (none,) = host_figures('nv_inference_request_success{model="chat",version="1"} 3\n').models
    assert none.prefix_hit_rate is None
