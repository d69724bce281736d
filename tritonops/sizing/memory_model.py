"""vLLM's memory arithmetic, per GPU of a tensor-parallel group (reference 1.2-1.7, 1.12).

    budget   = gpu_memory_utilization x CUDA total
    kv bytes = budget - weights - activation peak - non-torch [- other processes]
               [- CUDA-graph estimate] - safety margin
    blocks   = kv bytes // (block_size x KV bytes per token)
    tokens   = blocks x block_size          ("GPU KV cache size: N tokens")

The activation and non-torch terms are estimates calibrated on the reference's printed
numbers (bench/sizing_accuracy.py); every constant says where it comes from. The safety
margin is there because those terms are estimates: the plan must never promise KV cache
vLLM will not find.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tritonops.sizing import calibrated_terms as measured
from tritonops.sizing.gpu_spec import GpuSpec
from tritonops.sizing.model_spec import DTYPE_BYTES, ModelSpec
from tritonops.sizing.pipeline import PipelineStage, pipeline_stages, whole_model
from tritonops.sizing.versions import VllmProfile
from tritonops.units import GIB, MIB

# Sampler working copies of the [requests x vocab] float32 logits during the profiling run.
# V0 also computes log-probs and sorts the whole vocabulary (top_k = vocab - 1): 6 copies fit
# rows 5-7 of the reference. V1: 4 copies bound rows 26-27 (all non-KV memory but weights is
# 1.16-1.24 GiB there, with 200k-260k vocabularies at 256 requests).
SAMPLER_COPIES = {"V0": 6, "V1": 4}
# Memory outside PyTorch's allocator: cuBLAS workspaces, CUDA context where counted, NCCL
# buffers and custom all-reduce with TP > 1 (reference 1.7: observed 0.16-0.43 GiB).
NON_TORCH_TP1 = int(0.35 * GIB)
NON_TORCH_TP_MULTI = int(0.75 * GIB)
# The CUDA context vLLM's process creates before its baseline (H200 fixture: ~552 MB).
CUDA_CONTEXT_BYTES = int(0.55 * GIB)
# At TP > 1 each GPU also holds the NCCL communicators and the custom all-reduce's buffers before
# vLLM's snapshot: 1.46 GiB per GPU at TP 2 (total - free at the snapshot, 1,569,587,200 B on both
# ranks of 5 runs, tests/fixtures/real/calib-h200x2-tp2) against 0.51 GiB at TP 1. Outside the KV
# budget, but it must fit in the (1 - gpu_memory_utilization) share. Measured on NVLinked H200s
# only (NCCL's channels and the CUDA context differ on other cards and links): elsewhere the CUDA
# context alone, as before. TP 4 and 8 on H200s: taken as TP 2 (not measured).
STARTUP_TP_MULTI_BYTES = int(1.5 * GIB)
STARTUP_MEASURED_CC = (9, 0)


def startup_bytes(tensor_parallel_size: int, compute_capability: tuple[int, int], pipeline_parallel_size: int = 1) -> int:
    """Per GPU, what the process holds before vLLM's snapshot (outside the budget). Pipeline stages
    hold NCCL communicators too (taken as TP's: not measured)."""
    if (tensor_parallel_size == 1 and pipeline_parallel_size == 1) or compute_capability != STARTUP_MEASURED_CC:
        return CUDA_CONTEXT_BYTES
    return STARTUP_TP_MULTI_BYTES
# CUDA graphs: 0.62-0.74 GiB observed for 8B-class (32-layer) models (reference 1.7); up to
# 1.01 GiB captured by vLLM 0.25 on the H200 (Qwen3-8B, 36 layers, 51 sizes): 24 MiB a layer.
CUDAGRAPH_BASE = int(0.25 * GIB)
CUDAGRAPH_PER_LAYER = 24 * MIB
# MoE: row 3 (Qwen3-235B-A22B-FP8, TP 4, H100) shows ~5 GiB (~9 % of its weights) more non-KV
# memory per GPU than the dense arithmetic explains (fused-MoE workspaces, weight layout; that
# run also had LMCache). One observation: reserve 8 % of weights, which with the safety margin
# still predicts that row low.
MOE_EXTRA_FRACTION = 0.08
# Safety margin: fixed + a share of the budget (allocator fragmentation, catalog totals) + more
# with TP > 1, where vLLM keeps the minimum block count over the ranks.
MARGIN_FIXED = int(0.25 * GIB)
MARGIN_BUDGET_FRACTION = 0.015
MARGIN_TP_FRACTION = 0.01
# Pieces loaded on top of the checkpoint tensors that TP does not split (norms, biases).
WEIGHTS_OVERHEAD_FRACTION = 0.005


@dataclass(frozen=True)
class EngineSettings:
    """The engine arguments that move memory."""

    tensor_parallel_size: int
    gpu_memory_utilization: float
    dtype: str
    kv_cache_dtype: str
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    enforce_eager: bool
    pipeline_parallel_size: int = 1


@dataclass(frozen=True)
class MemoryEstimate:
    """One GPU of the group, in bytes. With pipeline parallel: a GPU of the stage that holds the fewest
    KV blocks (vLLM gives every stage that count), `stage` says which."""

    budget: int
    weights: int
    activation: int
    non_torch: int
    other_processes: int
    cudagraph: int
    safety_margin: int
    kv_cache: int
    kv_bytes_per_token: int
    block_size: int
    num_blocks: int
    printed_tokens: int | None = None  # what vLLM prints when it is not blocks x block size
    window_blocks: int = 0             # blocks a sliding-window spec adds to each request
    calibrated: bool = False           # every term measured for this version, family, TP and GPU
    stage: int = 0                     # the pipeline stage these figures are of

    @property
    def kv_cache_tokens(self) -> int:
        if self.printed_tokens is not None:
            return self.printed_tokens
        return self.num_blocks * self.block_size

    @property
    def non_kv(self) -> int:
        return self.weights + self.activation + self.non_torch + self.other_processes + self.cudagraph


def kv_dtype_bytes(settings: EngineSettings) -> int:
    if settings.kv_cache_dtype.startswith("fp8"):
        return 1
    return DTYPE_BYTES[settings.dtype]


def kv_bytes_per_token(model: ModelSpec, tensor_parallel_size: int, kv_bytes: int, layers: int | None = None) -> int:
    """Per GPU: every rank stores its KV-head slice of every token of its layers (all of them, or a
    pipeline stage's); heads are replicated once TP exceeds their count (max(1, kv_heads // TP),
    reference 1.3)."""
    layers = model.num_hidden_layers if layers is None else layers
    if model.use_mla:
        return layers * (model.kv_lora_rank + model.qk_rope_head_dim) * kv_bytes
    heads = max(1, model.num_key_value_heads // tensor_parallel_size)
    return 2 * layers * heads * model.head_dim * kv_bytes


def _non_linear_params(model: ModelSpec) -> int:
    embeddings = model.vocab_size * model.hidden_size * (1 if model.tie_word_embeddings else 2)
    return embeddings + (2 * model.num_hidden_layers + 1) * model.hidden_size


def quantized_weight_bytes(model: ModelSpec, bits: int, group_size: int | None = 128) -> int:
    """Linear layers at `bits` (plus a 16-bit scale and a `bits` zero point per group),
    embeddings and norms at 16 bits."""
    linear = max(model.parameters - _non_linear_params(model), 0)
    per_weight_bits = bits + ((16 + bits) / group_size if group_size else 0)
    return int(linear * per_weight_bits / 8) + 2 * _non_linear_params(model)


def checkpoint_weight_bytes(model: ModelSpec, dtype: str) -> int:
    """All weights as loaded in `dtype`, before TP splits them."""
    if model.quantization is not None:
        if model.weight_bytes:
            return model.weight_bytes
        bits = model.quantization.bits or (8 if "fp8" in model.quantization.method else 4)
        group = None if bits == 8 else (model.quantization.group_size or 128)
        return quantized_weight_bytes(model, bits, group)
    target = DTYPE_BYTES[dtype]
    if model.weight_bytes and DTYPE_BYTES.get(model.torch_dtype) == target:
        return model.weight_bytes
    return model.parameters * target


def stage_share(model: ModelSpec, total: int, stage: PipelineStage) -> int:
    """A pipeline stage's part of `total` checkpoint bytes: its layers' share of what is not the
    vocabulary matrices, plus the embedding on the first stage and the LM head on the last (16-bit)."""
    if stage.count == 1:
        return total
    vocab_matrix = model.vocab_size * model.hidden_size * 2
    in_layers = max(total - vocab_matrix * (1 if model.tie_word_embeddings else 2), 0)
    return int(in_layers * stage.layers / model.num_hidden_layers) + vocab_matrix * (stage.first + stage.last)


def weights_per_gpu(model: ModelSpec, dtype: str, tensor_parallel_size: int, stage: PipelineStage | None = None) -> int:
    tp = tensor_parallel_size
    stage = stage or whole_model(model.num_hidden_layers)
    total = stage_share(model, checkpoint_weight_bytes(model, dtype), stage)
    per_gpu = total / tp
    act_bytes = DTYPE_BYTES[dtype]
    if tp > model.num_key_value_heads and not model.use_mla:
        # K and V projections replicated: each rank holds a whole head instead of a slice
        kv_proj = 2 * model.hidden_size * model.head_dim * stage.layers * act_bytes
        per_gpu += kv_proj * (1 - model.num_key_value_heads / tp)
    # rotary cos/sin cache over max_position_embeddings (row 1: +0.031 GiB for Llama-3.1-8B)
    rope_cache = model.max_position_embeddings * model.head_dim * 4
    return int(per_gpu * (1 + WEIGHTS_OVERHEAD_FRACTION)) + rope_cache


def activation_peak(model: ModelSpec, settings: EngineSettings, profile: VllmProfile,
                    stage: PipelineStage | None = None) -> int:
    """Peak increase of the profiling run: one forward pass over max_num_batched_tokens
    (MLP intermediates dominate), then the sampler over min(max_num_seqs, tokens) requests.

    Versions that read PyTorch's peak counter see the larger of the two (row 1: the peak
    increase, 2.07 GiB, is the forward pass alone). Versions up to 0.6.3 measure the drop
    in free memory instead, which keeps the allocator's cached blocks of both (rows 5-7)."""
    tp = settings.tensor_parallel_size
    act = DTYPE_BYTES[settings.dtype]
    tokens = settings.max_num_batched_tokens
    hidden = 3 * model.hidden_size
    if model.is_moe:
        n = model.moe_intermediate_size / tp
        mlp = model.num_experts_per_tok * (3 * n + model.hidden_size)
        mlp += 3 * model.shared_expert_intermediate_size / tp
    else:
        mlp = (3 if model.gated_mlp else 2) * model.intermediate_size / tp
    attn = (model.num_attention_heads // tp * 2 + 2 * max(1, model.num_key_value_heads // tp)) * model.head_dim
    forward = tokens * (max(mlp, attn) + hidden) * act
    requests = min(settings.max_num_seqs, tokens)
    samples = stage is None or stage.last   # only the last pipeline stage samples
    sampler = requests * model.vocab_size * 4 * SAMPLER_COPIES[profile.engine] if samples else 0
    if profile.memory_formula == "v0_peak_growth":
        return int(forward + sampler)
    return int(max(forward, sampler))


def cudagraph_estimate(model: ModelSpec, tensor_parallel_size: int, layers: int | None = None) -> int:
    return CUDAGRAPH_BASE + CUDAGRAPH_PER_LAYER * (model.num_hidden_layers if layers is None else layers)


def graphs_subtracted(model: ModelSpec, profile: VllmProfile) -> bool:
    """CUDA graphs taken out of the KV budget (else captured after the KV cache, outside it)."""
    if profile.measured_memory:
        return not measured.uses_v2_runner(model)
    return profile.subtracts_cudagraph_memory


def _estimate_measured(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings,
                       profile: VllmProfile, stage: PipelineStage) -> MemoryEstimate:
    """The version whose terms were measured on real hardware (calibrated_terms.py)."""
    tp, pp = settings.tensor_parallel_size, settings.pipeline_parallel_size
    eager = settings.enforce_eager
    calibrated = measured.is_calibrated(model, tp, gpu.compute_capability, pp)
    budget = math.ceil(gpu.cuda_total_bytes * settings.gpu_memory_utilization)  # request_memory()
    weights = measured.weights(model, settings.dtype, tp, stage)
    if model.quantization is not None:
        weights = weights_per_gpu(model, settings.dtype, tp, stage)
    activation = measured.activation(model, settings.max_num_batched_tokens, settings.max_num_seqs, eager, tp, stage)
    non_torch = measured.non_torch(model, eager, tp, calibrated, pp)
    graphs = 0
    if graphs_subtracted(model, profile) and not eager:
        graphs = cudagraph_estimate(model, tp, stage.layers)
    margin = measured.allowance(activation, calibrated, model, weights, tp, budget, pp)
    kv = budget - weights - activation - non_torch - graphs - margin
    per_token = kv_bytes_per_token(model, tp, kv_dtype_bytes(settings), stage.layers)
    blocks = int(max(kv, 0) // (profile.block_size * per_token))
    window = model.kv_window
    printed = measured.printed_kv_tokens(blocks, profile.block_size, settings.max_model_len, window,
                                         settings.max_num_batched_tokens) if window else None
    return MemoryEstimate(budget=budget, weights=weights, activation=activation, non_torch=non_torch,
                          other_processes=0, cudagraph=graphs, safety_margin=margin,
                          kv_cache=max(kv, 0), kv_bytes_per_token=per_token,
                          block_size=profile.block_size, num_blocks=blocks, printed_tokens=printed,
                          window_blocks=1 if window else 0, calibrated=calibrated, stage=stage.index)


def estimate_memory(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings,
                    profile: VllmProfile) -> MemoryEstimate:
    """One GPU's figures. With pipeline parallel, every stage is estimated and the one with the fewest
    KV blocks is returned: vLLM's engine gives every stage the smallest block count of all."""
    return min(stage_estimates(model, gpu, settings, profile), key=lambda memory: (memory.num_blocks, memory.stage))


def stage_estimates(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings,
                    profile: VllmProfile) -> tuple[MemoryEstimate, ...]:
    """One GPU of each pipeline stage (one, without pipeline parallel)."""
    estimate = _estimate_measured if profile.measured_memory else _estimate_formula
    return tuple(estimate(model, gpu, settings, profile, stage)
                 for stage in pipeline_stages(model.num_hidden_layers, settings.pipeline_parallel_size))


def _estimate_formula(model: ModelSpec, gpu: GpuSpec, settings: EngineSettings, profile: VllmProfile,
                      stage: PipelineStage) -> MemoryEstimate:
    """Versions whose terms were not measured: the reference's formulas."""
    tp = settings.tensor_parallel_size
    budget = int(settings.gpu_memory_utilization * gpu.cuda_total_bytes)
    weights = weights_per_gpu(model, settings.dtype, tp, stage)
    activation = activation_peak(model, settings, profile, stage)
    if model.is_moe:
        activation += int(MOE_EXTRA_FRACTION * weights)
    several = tp > 1 or settings.pipeline_parallel_size > 1
    non_torch = NON_TORCH_TP_MULTI if several else NON_TORCH_TP1
    others = gpu.other_process_bytes if profile.subtracts_other_processes else 0
    graphs = 0
    if profile.subtracts_cudagraph_memory and not settings.enforce_eager:
        graphs = cudagraph_estimate(model, tp, stage.layers)
    margin = MARGIN_FIXED + int(budget * (MARGIN_BUDGET_FRACTION + (MARGIN_TP_FRACTION if several else 0)))
    kv = budget - weights - activation - non_torch - others - graphs - margin
    per_token = kv_bytes_per_token(model, tp, kv_dtype_bytes(settings), stage.layers)
    blocks = max(kv, 0) // (profile.block_size * per_token)
    return MemoryEstimate(budget=budget, weights=weights, activation=activation, non_torch=non_torch,
                          other_processes=others, cudagraph=graphs, safety_margin=margin,
                          kv_cache=max(kv, 0), kv_bytes_per_token=per_token,
                          block_size=profile.block_size, num_blocks=int(blocks), stage=stage.index)
