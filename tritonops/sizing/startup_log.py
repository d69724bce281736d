"""What one vLLM 0.25 start-up printed, parsed from its log (bench/real_gpu_calib.py runs), or
from a table of per-rank measurements (the TP 2 runs, one CSV row each).

Pure: text in, `StartupRecord`s out. The log holds vLLM's own lines ("Model loading took",
"Available KV cache memory", "GPU KV cache size", "Graph capturing finished", the refusal) and
one `CALIB_RESULT {json}` line in which the run printed the worker's exact byte counts and its
configuration. The table holds the same byte counts, read inside each worker (rank 0's).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class StartupRecord:
    run_id: str
    model: str
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    enforce_eager: bool
    holdout: bool
    started: bool                      # False: vLLM refused (error kept)
    error: str = ""
    kv_tokens: int | None = None       # "GPU KV cache size: N tokens"
    num_blocks: int | None = None
    block_size: int = 16
    total_memory: int | None = None    # CUDA total the worker saw
    requested_memory: int | None = None
    weights: int | None = None
    activation: int | None = None
    non_torch: int | None = None
    cudagraph_estimate: int | None = None
    available_kv: int | None = None
    v2_runner: bool | None = None
    graphs_gib: float | None = None    # "Graph capturing finished in N secs, took X GiB"
    free_after_start: int | None = None
    tensor_parallel_size: int = 1      # byte counts are per GPU (rank 0)
    dtype: str = "bfloat16"


_KV = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_GRAPHS = re.compile(r"Graph capturing finished in \d+ secs, took ([\d.]+) GiB")


def parse_startup_log(text: str) -> StartupRecord | None:
    """None when the run was skipped (its call ran out of time) or printed no result."""
    line = next((x for x in text.splitlines() if x.startswith("CALIB_RESULT ")), None)
    if line is None:
        return None
    result = json.loads(line[len("CALIB_RESULT "):])
    if result.get("skipped"):
        return None
    spec = result["spec"]
    worker = result.get("worker") or {}
    kv = _KV.search(text)
    graphs = _GRAPHS.search(text)
    after = result.get("after_start") or {}
    return StartupRecord(
        run_id=spec["id"], model=spec["model"], gpu_memory_utilization=spec["gpu_memory_utilization"],
        max_model_len=spec["max_model_len"], max_num_seqs=spec["max_num_seqs"],
        max_num_batched_tokens=spec["max_num_batched_tokens"], enforce_eager=spec["enforce_eager"],
        holdout=bool(spec.get("holdout")), started=bool(result.get("ok")), error=result.get("error", ""),
        kv_tokens=int(kv.group(1).replace(",", "")) if kv else None,
        num_blocks=result.get("num_gpu_blocks"), block_size=result.get("block_size") or 16,
        total_memory=worker.get("total_memory"), requested_memory=worker.get("requested_memory"),
        weights=worker.get("weights"), activation=worker.get("peak_activation"),
        non_torch=worker.get("non_torch"), cudagraph_estimate=worker.get("cudagraph_estimate"),
        available_kv=worker.get("available_kv"), v2_runner=worker.get("v2_runner"),
        graphs_gib=float(graphs.group(1)) if graphs else None, free_after_start=after.get("free"),
    )


def _int_or_none(text: str) -> int | None:
    return int(text) if text else None


def parse_rank_measurements(text: str) -> list[StartupRecord]:
    """One record per row of a per-rank measurements table (measurements.csv of the TP 2 runs):
    the effective engine arguments, vLLM's printed "GPU KV cache size" and rank 0's byte counts."""
    records = []
    for row in csv.DictReader(io.StringIO(text)):
        graphs = row["log_graph_capture_GiB"]
        records.append(StartupRecord(
            run_id=row["id"], model=row["model"], gpu_memory_utilization=float(row["gpu_memory_utilization"]),
            max_model_len=int(row["eff_max_model_len"]), max_num_seqs=int(row["eff_max_num_seqs"]),
            max_num_batched_tokens=int(row["eff_max_num_batched_tokens"]),
            enforce_eager=row["enforce_eager"] == "True", holdout=False, started=row["outcome"] == "accepted",
            error=row["error"], kv_tokens=_int_or_none(row["log_gpu_kv_cache_tokens"]),
            num_blocks=_int_or_none(row["num_gpu_blocks"]), total_memory=_int_or_none(row["total_mem_bytes"]),
            requested_memory=_int_or_none(row["requested_bytes"]), weights=_int_or_none(row["weights_bytes"]),
            activation=_int_or_none(row["peak_activation_bytes"]), non_torch=_int_or_none(row["non_torch_bytes"]),
            available_kv=_int_or_none(row["available_kv_bytes"]), graphs_gib=float(graphs) if graphs else None,
            tensor_parallel_size=int(row["tp"]), dtype=row["dtype"]))
    return records
