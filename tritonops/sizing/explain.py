"""A plan as rows a person reads: (field, value, reason). Pure; the CLI draws them."""

from __future__ import annotations

from tritonops.sizing.engine_plan import EnginePlan
from tritonops.units import gib

_FIELDS = ("tensor_parallel_size", "pipeline_parallel_size", "distributed_executor_backend", "max_model_len", "dtype", "kv_cache_dtype", "gpu_memory_utilization",
           "enforce_eager", "max_num_seqs", "max_num_batched_tokens", "swap_space", "kv_offloading_size", "kv_cache_tokens",
           "vllm_auto_max_model_len")


def _value(plan: EnginePlan, name: str) -> str:
    value = plan.model_json.get(name) if name == "distributed_executor_backend" else getattr(plan, name)
    if isinstance(value, bool):
        return str(value).lower()
    return "-" if value is None else str(value)


def plan_rows(plan: EnginePlan) -> list[tuple[str, str, str]]:
    """One row per engine field, with the field's reason."""
    rows = []
    for name in _FIELDS:
        reason = next((r.why or str(r) for r in plan.reasons if r.field == name), "")
        if name in ("swap_space", "kv_offloading_size", "vllm_auto_max_model_len", "pipeline_parallel_size",
                    "distributed_executor_backend") and not reason:
            continue
        assumed = " (assumed)" if name in plan.assumed else ""
        rows.append((name, _value(plan, name), reason + assumed))
    return rows


def memory_line(plan: EnginePlan) -> str:
    m = plan.memory
    parts = [f"budget {gib(m.budget)} ({plan.gpu_memory_utilization} x {gib(m.cuda_total)})",
             f"weights {gib(m.weights)}", f"activation {gib(m.activation)}", f"non-torch {gib(m.non_torch)}"]
    if m.other_processes:
        parts.append(f"other processes {gib(m.other_processes)}")
    if m.cudagraph:
        parts.append(f"CUDA graphs {gib(m.cudagraph)}")
    parts.append(f"margin {gib(m.safety_margin)}")
    parts.append(f"KV cache {gib(m.kv_cache)} ({plan.kv_bytes_per_token} B/token)")
    stage = f" of stage {plan.kv_stage + 1} (the fewest KV blocks)" if plan.hosts > 1 else ""
    return f"per GPU{stage}: " + ", ".join(parts)


def headline(plan: EnginePlan) -> str:
    where = f"{plan.gpu_count} x {plan.gpu_name} (CC {plan.compute_capability})"
    if plan.hosts > 1:
        where = f"{plan.hosts} hosts of {where}"
    if plan.fits:
        pp = f" x PP {plan.pipeline_parallel_size}" if plan.hosts > 1 else ""
        return (f"{plan.model} fits on {where}: TP {plan.tensor_parallel_size}{pp}, max_model_len "
                f"{plan.max_model_len}, {plan.dtype}, vLLM {plan.vllm_version} ({plan.engine})")
    return f"{plan.model} does not fit on {where} with vLLM {plan.vllm_version}"


def why_it_does_not_fit(plan: EnginePlan) -> str:
    """One line for a plan that does not fit, as `tritonops size` says it: the headline, each problem, and what
    would fit instead (now, or with a later vLLM)."""
    parts = [headline(plan), *plan.problems]
    parts += [f"would fit: {alt.summary}" if alt.available else f"later: {alt.summary}" for alt in plan.alternatives]
    return "; ".join(parts)
