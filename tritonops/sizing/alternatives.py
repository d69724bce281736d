"""What would fit when the plan does not (or falls short of the target context)."""

from __future__ import annotations

from dataclasses import replace

from tritonops.sizing.engine_plan import Alternative, EnginePlan, SizingRequest
from tritonops.sizing.gpu_spec import GpuSpec
from tritonops.sizing.memory_model import quantized_weight_bytes
from tritonops.sizing.model_spec import ModelSpec, Quantization
from tritonops.sizing.pipeline import MAX_PIPELINE_HOSTS
from tritonops.sizing.tp_rules import valid_tp_sizes
from tritonops.units import gib

MAX_GPUS_PER_HOST = 8


def alternatives_for(model: ModelSpec, gpus: GpuSpec, request: SizingRequest, plan: EnginePlan,
                     size) -> list[Alternative]:
    """`size` is the chooser itself (passed in to keep imports one-way)."""
    options: list[Alternative] = []
    free = replace(request, tensor_parallel_size=None, max_model_len=None,
                   max_context=request.max_model_len or request.max_context)
    target = min(model.max_model_len, free.max_context or model.max_model_len)
    pp = request.pipeline_parallel_size or 1
    each = "" if pp == 1 else f" (x {pp} hosts, one pipeline stage each)"
    here = "this host" if pp == 1 else f"these {pp} hosts"

    def ok(candidate: EnginePlan) -> bool:
        return candidate.fits and candidate.max_model_len > 0

    # more GPUs of the same kind, on a bigger host
    for tp in valid_tp_sizes(model, MAX_GPUS_PER_HOST):
        if tp <= gpus.count:
            continue
        bigger = size(model, gpus.with_count(tp), replace(free, tensor_parallel_size=tp))
        if ok(bigger):
            options.append(Alternative("tensor_parallel", f"tensor_parallel_size {tp} on a host with {tp} x "
                                       f"{gpus.name}{each}: max_model_len {bigger.max_model_len}",
                                       tensor_parallel_size=tp, max_model_len=bigger.max_model_len, gpus_needed=tp * pp,
                                       pipeline_parallel_size=request.pipeline_parallel_size))
            if bigger.max_model_len >= target:
                break

    # a quantized checkpoint of the same model
    if model.quantization is None:
        cc = gpus.compute_capability
        for method, bits in (("awq", 4), ("gptq", 4), ("fp8", 8)):
            quant = Quantization(method, bits, None if bits == 8 else 128)
            qmodel = replace(model, quantization=quant, weight_bytes=0)
            candidate = size(qmodel, gpus, replace(free, dtype=None))
            if ok(candidate):
                weights = quantized_weight_bytes(model, bits, None if bits == 8 else 128)
                options.append(Alternative("quantized", f"a {bits}-bit {method.upper()} checkpoint of this model "
                                           f"(~{gib(weights)} of weights): max_model_len {candidate.max_model_len} "
                                           f"with tensor_parallel_size {candidate.tensor_parallel_size} on {here}",
                                           tensor_parallel_size=candidate.tensor_parallel_size,
                                           max_model_len=candidate.max_model_len))
                break
            if cc < (7, 5) and method == "awq":
                continue

    # an fp8 KV cache doubles the tokens
    if (request.kv_cache_dtype or "auto") == "auto" and gpus.compute_capability >= (8, 0):
        candidate = size(model, gpus, replace(free, kv_cache_dtype="fp8"))
        if ok(candidate) and candidate.max_model_len > plan.max_model_len:
            options.append(Alternative("kv_cache_dtype", f"kv_cache_dtype fp8 (half the KV bytes): max_model_len "
                                       f"{candidate.max_model_len}", tensor_parallel_size=candidate.tensor_parallel_size,
                                       max_model_len=candidate.max_model_len))

    # the longest context that fits as things are
    if request.max_model_len is not None or not plan.fits:
        candidate = size(model, gpus, replace(free, max_context=None, tensor_parallel_size=request.tensor_parallel_size
                                              if request.tensor_parallel_size and
                                              request.tensor_parallel_size <= gpus.count else None))
        if ok(candidate):
            options.append(Alternative("shorter_context", f"max_model_len {candidate.max_model_len} (the longest "
                                       f"that fits, tensor_parallel_size {candidate.tensor_parallel_size})",
                                       tensor_parallel_size=candidate.tensor_parallel_size,
                                       max_model_len=candidate.max_model_len))

    # several hosts like this one: a pipeline over a Ray cluster, one stage per host
    if pp == 1:
        options += _pipelines(model, gpus, free, target, size)
    return options


def _pipelines(model: ModelSpec, gpus: GpuSpec, free: SizingRequest, target: int, size) -> list[Alternative]:
    """The fewest hosts that hold the model, and (if that falls short of the target context) the fewest
    that reach it."""
    found: list[Alternative] = []
    for hosts in range(2, min(MAX_PIPELINE_HOSTS, model.num_hidden_layers) + 1):
        candidate = size(model, gpus, replace(free, pipeline_parallel_size=hosts))
        if not (candidate.fits and candidate.max_model_len > 0):
            continue
        if found and candidate.max_model_len < target:
            continue
        tp = candidate.tensor_parallel_size
        found.append(Alternative("pipeline_parallel", f"pipeline_parallel_size {hosts}: a Ray cluster of {hosts} hosts "
                                 f"like this one, tensor_parallel_size {tp} on each: max_model_len "
                                 f"{candidate.max_model_len}", tensor_parallel_size=tp,
                                 max_model_len=candidate.max_model_len, gpus_needed=hosts * tp,
                                 pipeline_parallel_size=hosts))
        if candidate.max_model_len >= target:
            break
    return found
