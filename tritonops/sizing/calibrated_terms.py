"""vLLM 0.25's non-KV memory, term by term, as measured on a real H200 (tests/fixtures/real/calib-h200).

vLLM 0.25 (V1 engine) budgets  KV = ceil(util x CUDA total) - weights - activation peak - non-torch
[- CUDA-graph estimate, V1 model runner only], floored to whole blocks (gpu_worker.py
determine_available_memory). Each function here is one term, per GPU, in bytes; each constant says
which runs it was read from. Every term is an upper bound of what those runs printed, so the KV
cache predicted from them is at most what vLLM finds.

Which runner: 0.25 uses its "V2 model runner" for every dense model and for the MoE architectures in
DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES (config/vllm.py); other MoE models keep the V1 runner. The V2
runner's profile_cudagraph_memory() returns 0 and it captures graphs after the KV cache (outside the
budget); the V1 runner profiles them and subtracts the estimate.
"""

from __future__ import annotations

import math

from tritonops.sizing.model_spec import DTYPE_BYTES, ModelSpec
from tritonops.sizing.pipeline import PipelineStage, whole_model
from tritonops.units import KIB, MIB

# model_type values of the MoE architectures 0.25 runs on the V2 runner (config/vllm.py)
V2_RUNNER_MOE_TYPES = frozenset({"qwen2_moe", "deepseek_v2", "granitemoe"})
# Families whose attention keeps one more per-token tensor at the forward peak: a bias on the
# QKV projection (Qwen2: 2h + 0.5-1 KiB per token measured, 1.5 KiB taken) or a norm on q and k (Qwen3: 2h).
QKV_EXTRA_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"})
# model_type values measured on the H200 (fixtures); elsewhere the prediction says "uncalibrated".
CALIBRATED_TYPES = frozenset({"llama", "mistral", "qwen2", "qwen3", "phi3", "qwen3_moe", "qwen2_moe"})

# PyTorch's caching allocator: blocks of >= 10 MiB come from segments rounded up to 2 MiB, and a
# block of at least max_split_size (vLLM loads weights with max_split_size_mb=20) is never split,
# so the whole rounded segment counts (Qwen2.5-7B: +99 MiB over its tensor bytes, exact to 0.05 MiB).
_LARGE_ROUND = 2 * MIB
_NO_SPLIT_FROM = 20 * MIB
# What the load adds beyond the tensors and the rotary cache: 0.03-16.1 MiB over 9 models.
WEIGHTS_ALLOWANCE = 20 * MIB
# cuBLAS workspace, allocated through PyTorch at the first GEMM of the profile: the intercept of
# the forward term, exact for Llama-3.1-8B (248 MiB at 2048 tokens, 464 MiB at 4096)...
CUBLAS_WORKSPACE = 32 * MIB
# ...plus 2 KiB of small tensors in every dense run: 1 MiB taken.
FORWARD_SMALL = MIB
# torch.compile'd forward (graphs on): +60-64 MiB over the eager forward in 7 runs.
COMPILED_FORWARD_EXTRA = 64 * MIB
# ...and the compiled profile holds another bf16 vocab x hidden matrix with the batch's hidden
# states: 518 / 1034 / 1252 MiB for Llama-3.2-1B / Llama-3.1-8B / Qwen3-8B at 2-4k tokens
# (2Vh + 2Th + 17..33 MiB).
COMPILED_VOCAB_EXTRA = 64 * MIB
# V2 runner sampler: 6 bytes per logit (a bf16 copy and an fp32 one) + 36 KiB + 1.25 hidden per
# request, with the forward's hidden states still alive: exact for Qwen2.5-0.5B and Llama-3.2-1B.
SAMPLER_V2_PER_LOGIT = 6
SAMPLER_V2_PER_REQUEST = 36 * KIB
# ...up to 16.2 MiB more when compiled (Qwen2.5-0.5B, 512 requests)
SAMPLER_V2_FIXED = 24 * MIB
# V1 runner (Qwen3-30B-A3B): 18 bytes per logit + up to 98 MiB.
SAMPLER_V1_PER_LOGIT = 18
SAMPLER_V1_FIXED = 128 * MIB
# MoE forward: per token, top-k x (w13 output, activation, w2 output) + 20 hidden; measured
# 1680 MiB at 16k tokens (Qwen3-30B-A3B), 425 MiB at 4k (Qwen1.5-MoE, with its shared expert).
MOE_HIDDEN_COPIES = 20
MOE_FIXED = 64 * MIB
# Memory outside PyTorch that the profile sees grow: 230 MiB in every run at TP 1 (both runners,
# eager), 246 MiB with the V1 runner's graphs profiled.
NON_TORCH_V2_TP1 = 240 * MIB
NON_TORCH_V1_GRAPHS_TP1 = 256 * MIB
# TP 2 adds the collectives' buffers that NCCL (2.28, NVLink) and the custom all-reduce allocate at
# the first all-reduce, inside the profile: 552 MiB eager, 554 MiB with graphs, on each rank of 5
# runs (tests/fixtures/real/calib-h200x2-tp2), against 230 MiB at TP 1: 322-324 MiB, 320 taken on top
# of the TP 1 term (which is itself 10 MiB over what it bounds).
COLLECTIVE_BUFFERS_TP2 = 320 * MIB
# TP sizes whose per-rank terms were measured (TP 1: calib-h200; TP 2: calib-h200x2-tp2).
MEASURED_TP = frozenset({1, 2})
# ...and the families each TP > 1 was measured on: the six TP 2 runs are all Qwen2 models (Qwen2.5 and Qwen1.5 say
# model_type qwen2). Another family at TP 2 keeps UNMEASURED_TP_BUDGET_SHARE (issue #45: rows of another family,
# out of sample, came out up to 6.3 % under, about 132 MiB per GPU: the rules are not shown to bound them).
MEASURED_TP_TYPES = {2: frozenset({"qwen2"})}
# Where family, TP or GPU was not measured: a few % of the activation peak plus tens of MiB.
UNCALIBRATED_ACTIVATION_SHARE = 0.10
UNCALIBRATED_FIXED = 64 * MIB
UNCALIBRATED_MOE_WEIGHTS_SHARE = 0.08
# TP 4 and 8 are not measured, nor TP 2 outside the families above: the per-rank rules (split weights, all-reduce
# output) apply, but the collectives' buffers grow with the peers and vLLM keeps the smallest block count over the
# ranks. Half the 1 % of the budget kept for every TP > 1 before TP 2 was measured.
UNMEASURED_TP_BUDGET_SHARE = 0.005
UNCALIBRATED_NON_TORCH_TP1 = int(0.35 * 1024 * MIB)     # reference 1.7: 0.16-0.43 GiB seen elsewhere
UNCALIBRATED_NON_TORCH_TP_MULTI = int(0.75 * 1024 * MIB)


def uses_v2_runner(model: ModelSpec) -> bool:
    if model.hybrid_attention:
        return False
    return not model.is_moe or model.model_type in V2_RUNNER_MOE_TYPES


def is_calibrated(model: ModelSpec, tensor_parallel_size: int, compute_capability: tuple[int, int],
                  pipeline_parallel_size: int = 1) -> bool:
    """Family, TP and GPU generation the fixtures measured (TP 1 and 2 on Hopper, bf16/fp16 weights,
    one stage: pipeline parallel was not measured)."""
    return (model.model_type in CALIBRATED_TYPES and tensor_parallel_size in MEASURED_TP
            and pipeline_parallel_size == 1
            and compute_capability == (9, 0) and model.quantization is None and not model.rough)


def tp_measured(model_type: str, tp: int) -> bool:
    """Whether the per-rank terms at `tp` were measured on this family (TP 1 on every calibrated family)."""
    return tp == 1 or model_type in MEASURED_TP_TYPES.get(tp, frozenset())


def _allocated(nbytes: int) -> int:
    if nbytes >= _NO_SPLIT_FROM:
        return math.ceil(nbytes / _LARGE_ROUND) * _LARGE_ROUND
    return math.ceil(nbytes / 512) * 512


def weight_tensors(model: ModelSpec, dtype_bytes: int, tp: int, stage: PipelineStage | None = None) -> list[int]:
    """Bytes of each tensor one rank allocates, in vLLM's fused layout (qkv, gate_up, experts' w13/w2).
    `stage`: a pipeline stage's rank (its layers; the embedding on the first, norm and LM head on the last)."""
    stage = stage or whole_model(model.num_hidden_layers)
    h, layers = model.hidden_size, stage.layers
    q = model.num_attention_heads * model.head_dim
    kv = max(model.num_key_value_heads, tp) * model.head_dim   # KV heads replicated past their count
    b = dtype_bytes
    vocab = math.ceil(model.vocab_size / tp)
    tensors = [vocab * h * b] if stage.first else []
    if stage.last and (stage.count > 1 or not model.tie_word_embeddings):
        tensors.append(vocab * h * b)   # the LM head (tied to the embedding only when one rank holds both)
    mats = 2 if model.gated_mlp else 1
    for _ in range(layers):
        tensors += [math.ceil((q + 2 * kv) / tp) * h * b, math.ceil(q / tp) * h * b, 2 * h * b]
        if model.model_type in ("qwen2", "qwen2_moe"):
            tensors.append(math.ceil((q + 2 * kv) / tp) * b)
        if model.is_moe:
            n = math.ceil(model.moe_intermediate_size / tp)
            tensors += [model.num_experts * mats * n * h * b, model.num_experts * n * h * b,
                        model.num_experts * h * b]
            if model.shared_expert_intermediate_size:
                s = math.ceil(model.shared_expert_intermediate_size / tp)
                tensors += [mats * s * h * b, s * h * b, h * b]
        else:
            inter = math.ceil(model.intermediate_size / tp)
            tensors += [mats * inter * h * b, inter * h * b]
    if stage.last:
        tensors.append(h * b)
    return tensors


def weights(model: ModelSpec, dtype: str, tp: int, stage: PipelineStage | None = None) -> int:
    """Tensors as the allocator counts them, the bf16/fp16 rotary cos/sin cache, and the allowance."""
    b = DTYPE_BYTES[dtype]
    rope = model.max_position_embeddings * model.head_dim * b
    return sum(_allocated(t) for t in weight_tensors(model, b, tp, stage)) + rope + WEIGHTS_ALLOWANCE


def _forward(model: ModelSpec, tokens: int, tp: int) -> int:
    h = model.hidden_size
    if model.is_moe:
        n = model.moe_intermediate_size / tp
        per_token = model.num_experts_per_tok * (6 * n + 2 * h) + MOE_HIDDEN_COPIES * h
        per_token += 6 * model.shared_expert_intermediate_size / tp
        fixed = CUBLAS_WORKSPACE + MOE_FIXED
    else:
        per_token = 6 * model.intermediate_size / tp + 6 * h
        fixed = CUBLAS_WORKSPACE + FORWARD_SMALL
    if model.model_type in QKV_EXTRA_TYPES or model.model_type not in CALIBRATED_TYPES:
        per_token += 2 * h + 1536
    if tp > 1:
        # vLLM's all-reduce is out of place (custom all-reduce and pynccl: out = torch.empty_like(input)),
        # so the reduced [tokens x hidden] copy is alive at the peak: Qwen2.5-7B at TP 2 is
        # 6 x intermediate / 2 + 10 h (+1.5 B) per token, at TP 1 6 x intermediate + 8 h (+1.5 B).
        per_token += 2 * h
    return int(tokens * per_token) + fixed


def _sampler(model: ModelSpec, tokens: int, requests: int, v2_runner: bool) -> int:
    logits = requests * model.vocab_size
    if v2_runner:
        return int(SAMPLER_V2_PER_LOGIT * logits + requests * (SAMPLER_V2_PER_REQUEST + 1.25 * model.hidden_size)
                   + 2 * tokens * model.hidden_size) + SAMPLER_V2_FIXED
    return SAMPLER_V1_PER_LOGIT * logits + SAMPLER_V1_FIXED


def activation(model: ModelSpec, tokens: int, requests: int, eager: bool, tp: int,
               stage: PipelineStage | None = None) -> int:
    """The profile run's torch peak increase: the largest of the forward over `tokens`, the sampler
    over `requests` (on the last pipeline stage, which samples), and (compiled) the extra vocabulary
    matrix (kept on the stages that hold a vocabulary matrix: not measured with pipeline parallel)."""
    stage = stage or whole_model(model.num_hidden_layers)
    v2 = uses_v2_runner(model)
    forward = _forward(model, tokens, tp)
    candidates = [forward]
    if stage.last:
        candidates.append(_sampler(model, tokens, min(requests, tokens), v2))
    if not eager:
        candidates[0] = forward + COMPILED_FORWARD_EXTRA
        vocab = model.vocab_size   # whole: at TP 2 (Q01, 1261 MiB) the forward candidate is larger anyway
        if stage.first or stage.last:
            candidates.append(2 * vocab * model.hidden_size + 2 * tokens * model.hidden_size + COMPILED_VOCAB_EXTRA)
    return max(candidates)


def non_torch(model: ModelSpec, eager: bool, tp: int, calibrated: bool = True, pp: int = 1) -> int:
    """Per rank. TP 1 and 2 measured (the TP 2 buffers do not depend on the model); TP 4 and 8 not, nor
    pipeline parallel (NCCL's send/receive buffers between stages, Ray's worker process)."""
    if tp > 2 or pp > 1:
        return UNCALIBRATED_NON_TORCH_TP_MULTI
    if not calibrated:
        tp1 = UNCALIBRATED_NON_TORCH_TP1
    else:
        tp1 = NON_TORCH_V2_TP1 if (eager or uses_v2_runner(model)) else NON_TORCH_V1_GRAPHS_TP1
    return tp1 + (COLLECTIVE_BUFFERS_TP2 if tp == 2 else 0)


def allowance(activation_bytes: int, calibrated: bool, model: ModelSpec | None = None, weights_bytes: int = 0,
              tp: int = 1, budget: int = 0, pp: int = 1) -> int:
    """Zero where measured (the terms are bounds already); elsewhere a few % of the activation
    peak plus tens of MiB, and what the unmeasured cases are known to add: MoE models outside the
    measured ones (row 3 of the reference: ~9 % of the weights, FP8 at TP 4) and a TP the family was
    not measured at: TP 4 or 8, or TP 2 outside Qwen2 (vLLM keeps the smallest block count over the
    ranks; NCCL and all-reduce buffers grow with the peers). That share of the budget is kept by a
    family calibrated at TP 1 too."""
    model_type = model.model_type if model is not None else ""
    unmeasured_tp = int(UNMEASURED_TP_BUDGET_SHARE * budget) if (
        not tp_measured(model_type, tp) or pp > 1) else 0   # pipeline stages: not measured; vLLM keeps their minimum
    if calibrated:
        return unmeasured_tp
    extra = int(UNCALIBRATED_ACTIVATION_SHARE * activation_bytes) + UNCALIBRATED_FIXED
    if model is not None and model.is_moe:
        extra += int(UNCALIBRATED_MOE_WEIGHTS_SHARE * weights_bytes)
    return extra + unmeasured_tp


def printed_kv_tokens(num_blocks: int, block_size: int, max_model_len: int, window: int | None,
                      batched_tokens: int) -> int:
    """vLLM 0.25's "GPU KV cache size": max concurrency x max_model_len (kv_cache_utils.py
    get_kv_cache_capacity). Full attention: blocks x block size. A sliding-window spec needs one
    block more per request (even when the window is longer than the context)."""
    if window is None:
        per_request = math.ceil(max_model_len / block_size)
    else:
        per_request = math.ceil(min(window - 1 + batched_tokens, max_model_len) / block_size) + 1
    return int(num_blocks / per_request * max_model_len)


def blocks_needed(max_model_len: int, block_size: int, window: int | None, batched_tokens: int) -> int:
    """Blocks vLLM's start-up check asks for one request of max_model_len."""
    if window is None:
        return math.ceil(max_model_len / block_size)
    return math.ceil(min(window - 1 + batched_tokens, max_model_len) / block_size) + 1
