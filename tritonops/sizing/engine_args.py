"""The engine arguments (model.json) for a plan: only keys the target vLLM accepts."""

from __future__ import annotations

from tritonops.sizing.engine_plan import EnginePlan, SizingRequest
from tritonops.sizing.versions import VllmProfile


def model_json_for(plan: EnginePlan, profile: VllmProfile, request: SizingRequest) -> dict:
    """Every memory-relevant value is written explicitly, so what vLLM does is what was
    predicted, whatever its defaults or the backend's usage context are."""
    args: dict = {
        "model": plan.model,
        "tensor_parallel_size": plan.tensor_parallel_size,
        **({"pipeline_parallel_size": plan.pipeline_parallel_size, "distributed_executor_backend": "ray"}
           if plan.pipeline_parallel_size > 1 else {}),
        "gpu_memory_utilization": plan.gpu_memory_utilization,
        "max_model_len": plan.max_model_len,
        "dtype": plan.dtype,
    }
    if plan.kv_cache_dtype != "auto":
        args["kv_cache_dtype"] = plan.kv_cache_dtype
    args["enforce_eager"] = plan.enforce_eager
    args["max_num_seqs"] = plan.max_num_seqs
    # V0 without chunked prefill needs it >= max_model_len: written only when asked for there
    if profile.engine == "V1" or request.max_num_batched_tokens is not None:
        args["max_num_batched_tokens"] = plan.max_num_batched_tokens
    if plan.swap_space is not None:
        args["swap_space"] = plan.swap_space
    if plan.kv_offloading_size is not None:
        # the backend is written too: "native" became vLLM's default only in 2026 (engine_arg_keys.py)
        args["kv_offloading_size"] = plan.kv_offloading_size
        args["kv_offloading_backend"] = "native"
    return {key: value for key, value in args.items() if profile.accepts_key(key)}
