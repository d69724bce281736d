"""Which tensor_parallel_size values vLLM accepts for a model (reference 1.9)."""

from __future__ import annotations

from tritonops.sizing.model_spec import ModelSpec


def tp_problem(model: ModelSpec, tp: int) -> str | None:
    """Why vLLM would refuse this TP for the model; None when it would not."""
    if tp < 1:
        return "tensor_parallel_size must be at least 1"
    heads, kv = model.num_attention_heads, model.num_key_value_heads
    if heads % tp:
        return f"Total number of attention heads ({heads}) must be divisible by tensor parallel size ({tp})"
    if not model.use_mla:
        if tp >= kv and tp % kv:
            return f"tensor_parallel_size {tp} is not a multiple of the {kv} KV heads (they are replicated)"
        if tp < kv and kv % tp:
            return f"the {kv} KV heads do not split evenly over tensor_parallel_size {tp}"
    inter = model.moe_intermediate_size if model.is_moe else model.intermediate_size
    if inter % tp:
        return f"the MLP width {inter} does not split evenly over tensor_parallel_size {tp}"
    q = model.quantization
    if q is not None and q.group_size and q.method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        if (inter // tp) % q.group_size:
            return (f"{q.method} group size {q.group_size} does not divide the per-GPU MLP width "
                    f"{inter // tp} (\"The input size is not aligned with the quantized weight shape\")")
    return None


def valid_tp_sizes(model: ModelSpec, max_gpus: int) -> list[int]:
    return [tp for tp in range(1, max_gpus + 1) if tp_problem(model, tp) is None]
