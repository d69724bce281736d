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
        kv_cache_usage=0.42, running=3, waiting=1)
    idle = ModelFigures("embed")
    text = rendered([HostResult("gpu-01", "ok", "", HostFigures((chat, idle), True)),
                     HostResult("gpu-02", "failed", "metrics port 8002 closed (connection refused)")])
    rows = [" ".join(line.replace("│", " ").split()) for line in text.splitlines()]
    assert "gpu-01 chat 1,234 / 2 0.11 0.11 367.0 0.00 412.2 42% 3 / 1" in rows
    assert "embed 0 / 0 - - - - - - -" in rows
    assert "gpu-02 failed: metrics port 8002 closed (connection refused)" in rows
