"""The chooser: model + GPUs + request -> `EnginePlan`, every field with its reason.

Given values are checked, not chosen. Left-out values take the default vLLM applies for
that version and GPU (named in `assumed`), except the ones sizing exists to choose:
tensor_parallel_size, max_model_len, dtype and enforce_eager.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tritonops.sizing.calibrated_terms import (MEASURED_TP, MEASURED_TP_TYPES, UNMEASURED_TP_BUDGET_SHARE,
                                               tp_measured)
from tritonops.sizing.dtype_rules import kv_cache_dtype_problem, quantization_problem, resolve_dtype
from tritonops.sizing.engine_plan import EnginePlan, MemoryBreakdown, Reason, SizingRequest
from tritonops.sizing.alternatives import alternatives_for
from tritonops.sizing.engine_args import model_json_for
from tritonops.sizing.gpu_spec import GpuSpec
from tritonops.sizing.memory_model import (CUDA_CONTEXT_BYTES, EngineSettings, MemoryEstimate,
                                           cudagraph_estimate, estimate_memory, graphs_subtracted,
                                           startup_bytes)
from tritonops.sizing.model_spec import ModelSpec
from tritonops.sizing.pipeline import layer_split
from tritonops.sizing.request_numbers import checked_request
from tritonops.sizing.swap import cpu_kv_cache
from tritonops.sizing.tp_rules import tp_problem, valid_tp_sizes
from tritonops.sizing.versions import VllmProfile, profile_for
from tritonops.units import gib, round_down


@dataclass(frozen=True)
class Fit:
    """The longest max_model_len (multiple of 16, <= target) the predicted cache accepts."""

    tensor_parallel_size: int
    enforce_eager: bool
    max_model_len: int        # 0: nothing fits
    settings: EngineSettings
    memory: MemoryEstimate


def _settings(model: ModelSpec, gpus: GpuSpec, profile: VllmProfile, request: SizingRequest, tp: int,
              util: float, dtype: str, eager: bool, length: int) -> EngineSettings:
    seqs = request.max_num_seqs or profile.default_max_num_seqs(gpus.cuda_total_bytes, gpus.name)
    tokens = request.max_num_batched_tokens or profile.default_max_num_batched_tokens(
        gpus.cuda_total_bytes, gpus.name, length)
    return EngineSettings(tensor_parallel_size=tp, gpu_memory_utilization=util, dtype=dtype,
                          kv_cache_dtype=request.kv_cache_dtype or "auto", max_model_len=length,
                          max_num_seqs=seqs, max_num_batched_tokens=tokens, enforce_eager=eager,
                          pipeline_parallel_size=_pp(request))


def _pp(request: SizingRequest) -> int:
    return request.pipeline_parallel_size or 1


def accepts(profile: VllmProfile, memory: MemoryEstimate, length: int, concurrency: int = 1) -> bool:
    """vLLM's start-up check on the predicted blocks, and room for `concurrency` requests."""
    return length <= profile.max_tokens_accepted(memory.num_blocks - memory.window_blocks) and \
        concurrency * length <= memory.kv_cache_tokens


def vllm_auto_fit_length(model: ModelSpec, profile: VllmProfile, memory: MemoryEstimate) -> int | None:
    """The length vLLM's auto-fit picks (0.25 kv_cache_utils._auto_fit_max_model_len: the longest
    length whose blocks fit the KV memory, at most the model's), on versions that have it."""
    if not profile.auto_max_model_len:
        return None
    return min(model.max_model_len, profile.max_tokens_accepted(memory.num_blocks - memory.window_blocks))


def fit_length(model: ModelSpec, gpus: GpuSpec, profile: VllmProfile, request: SizingRequest, tp: int,
               util: float, dtype: str, eager: bool, target: int) -> Fit:
    """V1 profiles a fixed batch, so the cache does not depend on the length; V0 profiles
    max(length, 2048) tokens unless chunked prefill is on, so the longest accepted length is
    searched (feasible lengths are contiguous below the chunked-prefill switch, and the
    cache is constant above it)."""
    block = profile.block_size

    def at(length: int) -> tuple[EngineSettings, MemoryEstimate]:
        s = _settings(model, gpus, profile, request, tp, util, dtype, eager, length)
        return s, estimate_memory(model, gpus, s, profile)

    def ok(length: int) -> bool:
        s, m = at(length)
        if profile.engine == "V0" and not profile.chunked_prefill(length) and s.max_num_batched_tokens < length:
            return False
        return accepts(profile, m, length, request.concurrency)

    target = round_down(target, block)
    best = 0
    switch = profile.auto_chunked_prefill_above if profile.engine == "V0" else None
    regions = [(block, target)] if switch is None or target <= switch else \
        [(block, round_down(switch, block)), (round_down(switch, block) + block, target)]
    for low, high in regions:
        if high < low or not ok(low):
            continue
        lo, hi = low // block, high // block   # search in blocks: ok(lo) holds
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if ok(mid * block):
                lo = mid
            else:
                hi = mid - 1
        best = max(best, lo * block)
    settings, memory = at(best or min(target, 2048) or block)
    return Fit(tp, eager, best, settings, memory)


def _eager_options(model: ModelSpec, gpus: GpuSpec, profile: VllmProfile, request: SizingRequest,
                   util: float, tp: int) -> tuple[tuple[bool, ...], str]:
    """Which enforce_eager values to try, and why when only eager is possible."""
    if request.enforce_eager is not None:
        return (request.enforce_eager,), ""
    if graphs_subtracted(model, profile):
        return (False, True), ""
    # graphs are captured after the KV cache, outside the budget: they need the rest
    pp = _pp(request)
    headroom = int(gpus.cuda_total_bytes * (1 - util)) - startup_bytes(tp, gpus.compute_capability, pp)
    graphs = cudagraph_estimate(model, tp, max(layer_split(model.num_hidden_layers, pp)))
    if headroom < graphs:
        return (True,), (f"CUDA graphs (~{gib(graphs)}) would not fit in the {gib(max(headroom, 0))} left "
                         f"outside gpu_memory_utilization {util} (vLLM {profile.version} captures them after the "
                         "KV cache)")
    return (False,), ""


def _pick(fits: list[Fit], target: int, prefer: str) -> Fit:
    """Fewest GPUs reaching the target (graphs preferred over eager); else the longest
    context. `latency`: the most GPUs that still fit."""
    working = [f for f in fits if f.max_model_len > 0]
    if not working:
        return min(fits, key=lambda f: (f.tensor_parallel_size, f.enforce_eager))
    if prefer == "latency":
        return max(working, key=lambda f: (f.tensor_parallel_size, f.max_model_len, not f.enforce_eager))
    reaching = [f for f in working if f.max_model_len >= target]
    if reaching:
        return min(reaching, key=lambda f: (f.tensor_parallel_size, f.enforce_eager))
    return max(working, key=lambda f: (f.max_model_len, -f.tensor_parallel_size, not f.enforce_eager))


def size_engine(model: ModelSpec, gpus: GpuSpec, request: SizingRequest) -> EnginePlan:
    """The plan, and when it does not fit (or falls short of the target context) the
    alternatives that would."""
    request = checked_request(request)
    plan, short = _size(model, gpus, request)
    if not plan.fits or short:
        plan = replace(plan, alternatives=tuple(alternatives_for(model, gpus, request, plan,
                                                                 lambda *a: _size(*a)[0])))
    return plan


def _size(model: ModelSpec, gpus: GpuSpec, request: SizingRequest) -> tuple[EnginePlan, bool]:
    """The plan, and whether its max_model_len falls short of the target context."""
    profile = profile_for(request.vllm_version, gpus.compute_capability)
    dtype, dtype_reason, problems = _compatibility(model, gpus, profile, request)
    util = _utilization(gpus, profile, request)
    candidates, tp_problems = _tp_candidates(model, gpus, request)
    target, target_problems = _target_length(model, request)
    pp_problems = _pp_problems(model, profile, request)
    problems += [*util.problems, *tp_problems, *target_problems, *pp_problems]
    if pp_problems:   # sized as one host, so the rest of the plan still reads
        request = replace(request, pipeline_parallel_size=None)
    chosen, eager_why = _choose(model, gpus, profile, request, util.value, dtype, candidates, target)
    settings, memory, length, length_problems = _settled(model, gpus, profile, request, chosen, util.value, dtype)
    problems += length_problems
    cpu = cpu_kv_cache(profile, chosen.tensor_parallel_size, request.swap_space_gib, request.host_ram_bytes,
                       model.use_mla)
    batch_reasons, batch_assumed = _batch_reasons(profile, gpus, request, settings, length)
    auto_length = vllm_auto_fit_length(model, profile, memory)
    reasons = [_tp_reason(model, gpus, request, chosen.tensor_parallel_size, length, target,
                          _unmeasured_tp(profile, model, chosen.tensor_parallel_size)),
               *_pp_reasons(model, gpus, request, chosen.tensor_parallel_size, memory.stage),
               _length_reason(model, profile, request, memory, length, target, accepted=not problems),
               dtype_reason,
               Reason("kv_cache_dtype", request.kv_cache_dtype or "auto", "as requested" if request.kv_cache_dtype
                      else f"KV cache in the model dtype ({dtype})"),
               util.reason,
               _eager_reason(profile, request, chosen.enforce_eager, eager_why),
               *batch_reasons, *cpu.reasons,
               Reason("kv_cache_tokens", str(memory.kv_cache_tokens), f"predicted \"{profile.kv_tokens_log_line}\" "
                      f"({memory.num_blocks} blocks of {profile.block_size}; {gib(memory.kv_cache)} per GPU after a "
                      f"{gib(memory.safety_margin)} safety margin)")]
    if auto_length is not None:
        reasons.append(Reason("vllm_auto_max_model_len", str(auto_length), f"what vLLM {profile.version}'s own "
                              "auto-fit (max_model_len auto) would choose on the predicted KV cache; tritonops "
                              f"pins {length}"))
    problems += cpu.problems
    plan = EnginePlan(
        fits=not problems,
        model=request.model_ref or model.name,
        vllm_version=profile.version,
        engine=profile.engine,
        gpu_name=gpus.name,
        gpu_count=gpus.count,
        compute_capability=gpus.cc_str,
        tensor_parallel_size=chosen.tensor_parallel_size,
        max_model_len=length,
        dtype=dtype,
        kv_cache_dtype=request.kv_cache_dtype or "auto",
        gpu_memory_utilization=util.value,
        enforce_eager=settings.enforce_eager,
        max_num_seqs=settings.max_num_seqs,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        swap_space=cpu.swap_space,
        kv_cache_tokens=memory.kv_cache_tokens,
        kv_cache_bytes_per_gpu=memory.num_blocks * memory.block_size * memory.kv_bytes_per_token,
        weights_bytes_per_gpu=memory.weights,
        kv_bytes_per_token=memory.kv_bytes_per_token,
        memory=MemoryBreakdown(cuda_total=gpus.cuda_total_bytes, budget=memory.budget, weights=memory.weights,
                               activation=memory.activation, non_torch=memory.non_torch,
                               other_processes=memory.other_processes, cudagraph=memory.cudagraph,
                               safety_margin=memory.safety_margin, kv_cache=memory.kv_cache),
        reasons=tuple(reasons),
        assumed=(*(("gpu_memory_utilization",) if util.assumed else ()), *batch_assumed, *cpu.assumed),
        problems=tuple(problems),
        alternatives=(),
        notes=_notes(model, profile, memory, cpu.notes),
        rough=model.rough,
        kv_offloading_size=cpu.kv_offloading_size,
        cpu_kv_cache_bytes=cpu.cpu_bytes,
        vllm_auto_max_model_len=auto_length,
        pipeline_parallel_size=_pp(request),
        layer_split=layer_split(model.num_hidden_layers, _pp(request)) if _pp(request) > 1 else (),
        kv_stage=memory.stage,
    )
    return replace(plan, model_json=model_json_for(plan, profile, request)), length < target


def _compatibility(model: ModelSpec, gpus: GpuSpec, profile: VllmProfile,
                   request: SizingRequest) -> tuple[str, Reason, list[str]]:
    """The dtype and its reason, and what this GPU and vLLM version refuse outright."""
    cc = gpus.compute_capability
    problems = []
    if cc < profile.min_compute_capability:
        problems.append(f"vLLM {profile.version}'s Triton image needs compute capability "
                        f"{profile.min_compute_capability[0]}.{profile.min_compute_capability[1]}+ "
                        f"(NGC from 25.01); {gpus.name} is {gpus.cc_str}")
    dtype, reason, dtype_problem = resolve_dtype(model, cc, request.dtype)
    if dtype_problem:
        problems.append(dtype_problem)
        dtype = "float16" if dtype not in ("float16", "bfloat16", "float32") else dtype
    problems += [problem for problem in (quantization_problem(model, cc, profile),
                                         kv_cache_dtype_problem(request.kv_cache_dtype or "auto", cc)) if problem]
    return dtype, reason or Reason("dtype", dtype), problems


@dataclass(frozen=True)
class _Utilization:
    value: float
    reason: Reason
    assumed: bool                 # vLLM's default, not asked for
    problems: tuple[str, ...] = ()


def _utilization(gpus: GpuSpec, profile: VllmProfile, request: SizingRequest) -> _Utilization:
    """gpu_memory_utilization, checked against the memory other processes hold: vLLM either refuses
    to start or runs out later; a default is lowered where that still leaves a usable budget."""
    asked = request.gpu_memory_utilization
    if asked is not None:
        chosen = _Utilization(asked, Reason("gpu_memory_utilization", str(asked), "as requested"), assumed=False)
    else:
        default = profile.default_gpu_memory_utilization
        chosen = _Utilization(default, Reason("gpu_memory_utilization", str(default),
                                              f"vLLM {profile.version} default"), assumed=True)
    if gpus.free_bytes is None:
        return chosen
    util, free, total = chosen.value, gpus.free_bytes, gpus.cuda_total_bytes
    usable, wanted = free - CUDA_CONTEXT_BYTES, util * total
    if usable >= wanted or profile.subtracts_other_processes:
        return chosen
    lower = max(int(usable / total * 100) / 100, 0.0)
    if asked is None and lower >= 0.3:
        return _Utilization(lower, Reason("gpu_memory_utilization", str(lower), f"lowered from the default {util} "
                                          f"because only {gib(free)} of {gib(total)} is free (other processes)"),
                            False)
    if profile.checks_free_memory_at_start:
        problem = (f"Free memory on device ({gib(free)}/{gib(total)}) on startup is less than desired GPU memory "
                   f"utilization ({util}, {gib(wanted)}); at most {lower} would start")
    else:
        problem = (f"only {gib(free)} free for a {gib(wanted)} budget: vLLM {profile.version} does not count other "
                   f"processes and would run out of memory (use gpu_memory_utilization <= {lower})")
    return replace(chosen, problems=(problem,))


def _tp_candidates(model: ModelSpec, gpus: GpuSpec, request: SizingRequest) -> tuple[list[int], list[str]]:
    """The tensor_parallel_size values to try (a given one only, checked), and what is wrong with it."""
    asked = request.tensor_parallel_size
    if asked is None:
        return valid_tp_sizes(model, gpus.count) or [1], []
    problems = [problem for problem in (tp_problem(model, asked),) if problem]
    if asked > gpus.count:
        problems.append(f"tensor_parallel_size {asked} needs more GPUs than the {gpus.count} available")
    return [asked], problems


def _target_length(model: ModelSpec, request: SizingRequest) -> tuple[int, list[str]]:
    """The context the plan aims for: a given max_model_len (checked against the model's), else the
    model's maximum under the request's cap."""
    if request.max_model_len is None:
        return min(model.max_model_len, request.max_context or model.max_model_len), []
    if request.max_model_len > model.max_model_len:
        return request.max_model_len, [f"max_model_len {request.max_model_len} is above the model's limit "
                                       f"{model.max_model_len} (vLLM refuses unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)"]
    return request.max_model_len, []


def _choose(model: ModelSpec, gpus: GpuSpec, profile: VllmProfile, request: SizingRequest, util: float, dtype: str,
            candidates: list[int], target: int) -> tuple[Fit, str]:
    """The best fit over the TP candidates and their enforce_eager options, and why only eager was
    possible where that decided it."""
    fits: list[Fit] = []
    eager_why = ""
    for tp in candidates:
        options, why = _eager_options(model, gpus, profile, request, util, tp)
        eager_why = eager_why or why
        for eager in options:
            fits.append(fit_length(model, gpus, profile, request, tp, util, dtype, eager,
                                   max(target, profile.block_size)))
    return _pick(fits, target, request.prefer), eager_why


def _settled(model: ModelSpec, gpus: GpuSpec, profile: VllmProfile, request: SizingRequest, chosen: Fit,
             util: float, dtype: str) -> tuple[EngineSettings, MemoryEstimate, int, list[str]]:
    """The settings, memory and max_model_len the plan states, and why vLLM would refuse them. A given
    max_model_len is checked as is (not rounded): does vLLM accept exactly it?"""
    problems = []
    tp, pp = chosen.tensor_parallel_size, _pp(request)
    held = startup_bytes(tp, gpus.compute_capability, pp)
    if (tp > 1 or pp > 1) and gpus.cuda_total_bytes * (1 - util) < held:
        problems.append(f"at TP {tp}" + (f" x PP {pp}" if pp > 1 else "") + " each GPU holds ~{gib(held)} (CUDA context, NCCL, all-reduce "
                        f"buffers) before vLLM's snapshot, more than the {gib(gpus.cuda_total_bytes * (1 - util))} "
                        f"left outside gpu_memory_utilization {util}: vLLM would refuse (free memory on start-up "
                        f"below the budget)")
    if request.max_model_len is None:
        settings, memory, length = chosen.settings, chosen.memory, chosen.max_model_len
        if length == 0 and (memory.kv_cache <= 0 or memory.num_blocks == 0):
            problems.append(f"does not fit in {dtype}: {gib(memory.weights)} of weights per GPU "
                            f"(+{gib(memory.activation)} activation peak) leave no KV cache in {gib(memory.budget)} "
                            f"({util} x {gib(gpus.cuda_total_bytes)}) on {chosen.tensor_parallel_size} x {gpus.name}"
                            + (f" on each of {pp} hosts" if pp > 1 else ""))
        elif length == 0:
            problems.append(f"the KV cache ({memory.kv_cache_tokens} tokens) cannot hold one request of "
                            f"{profile.block_size} tokens")
        return settings, memory, length, problems
    length = request.max_model_len
    settings = _settings(model, gpus, profile, request, chosen.tensor_parallel_size, util, dtype,
                         chosen.enforce_eager, length)
    memory = estimate_memory(model, gpus, settings, profile)
    if not accepts(profile, memory, length, request.concurrency):
        longest = chosen.max_model_len
        problems.append(f"max_model_len {length} is larger than the {memory.kv_cache_tokens} tokens the KV "
                        f"cache is predicted to hold" + (f"; {longest} would fit" if longest else ""))
    if profile.engine == "V0" and not profile.chunked_prefill(length) and settings.max_num_batched_tokens < length:
        problems.append(f"max_num_batched_tokens {settings.max_num_batched_tokens} is smaller than "
                        f"max_model_len {length} (chunked prefill is off in this V0 engine)")
    return settings, memory, length, problems


def _pp_problems(model: ModelSpec, profile: VllmProfile, request: SizingRequest) -> list[str]:
    """Why vLLM could not run this model as a pipeline over that many hosts."""
    pp = _pp(request)
    if pp == 1:
        return []
    if pp > model.num_hidden_layers:
        return [f"pipeline_parallel_size {pp} is more than the model's {model.num_hidden_layers} layers "
                "(every stage needs one)"]
    if not (profile.accepts_key("pipeline_parallel_size") and profile.accepts_key("distributed_executor_backend")):
        return [f"vLLM {profile.version} cannot run a pipeline across hosts on Ray "
                "(distributed_executor_backend came in 0.5.1)"]
    return []


def _pp_reasons(model: ModelSpec, gpus: GpuSpec, request: SizingRequest, tp: int, kv_stage: int) -> list[Reason]:
    """pipeline_parallel_size (only when the plan spans hosts): which layers each host holds, and which
    stage's memory the KV figure is."""
    pp = _pp(request)
    if pp == 1:
        return []
    split, start, parts = layer_split(model.num_hidden_layers, pp), 0, []
    for index, layers in enumerate(split):
        parts.append(f"{'the head' if index == 0 else f'host {index + 1}'} layers {start}-{start + layers - 1}")
        start += layers
    return [Reason("pipeline_parallel_size", str(pp), f"one stage per host on a Ray cluster of {pp} hosts, "
                   f"{tp} x {gpus.name} each ({', '.join(parts)}); the KV figures are stage {kv_stage + 1}'s, the "
                   "fewest blocks (vLLM gives every stage that count)"),
            Reason("distributed_executor_backend", "ray", "vLLM runs stages on other hosts only through Ray")]


def _unmeasured_tp(profile: VllmProfile, model: ModelSpec, tp: int) -> str:
    """What the plan keeps for a TP whose per-rank terms were not measured for this version, or not on this
    model's family."""
    if not profile.measured_memory or tp_measured(model.model_type, tp):
        return ""
    keeps = f"the KV figure keeps {UNMEASURED_TP_BUDGET_SHARE:.1%} of the budget as an allowance for it"
    if tp not in MEASURED_TP:
        return f"; TP {tp} is not measured for vLLM {profile.version} (TP 1 and 2 are): {keeps}"
    families = ", ".join(sorted(MEASURED_TP_TYPES[tp]))
    return (f"; TP {tp} is measured for vLLM {profile.version} on {families} models only, "
            f"not {model.model_type or 'this family'}: {keeps}")


def _tp_reason(model: ModelSpec, gpus: GpuSpec, request: SizingRequest, tp: int, length: int,
               target: int, unmeasured: str = "") -> Reason:
    valid = ", ".join(map(str, valid_tp_sizes(model, gpus.count)))
    if request.tensor_parallel_size is not None:
        why = "as requested"
    elif request.prefer == "latency":
        why = f"the most GPUs that fit (--prefer latency); valid on {gpus.count} GPU(s): {valid}"
    elif length >= target:
        why = f"the fewest GPUs that hold the {target}-token target; valid on {gpus.count} GPU(s): {valid}"
    else:
        why = f"the longest context on {gpus.count} GPU(s) (valid: {valid or 'none'})"
    return Reason("tensor_parallel_size", str(tp), why + unmeasured)


def _length_reason(model: ModelSpec, profile: VllmProfile, request: SizingRequest, memory: MemoryEstimate,
                   length: int, target: int, accepted: bool) -> Reason:
    cap = "the model's maximum" if target == model.max_model_len else f"the cap {target}"
    per_request = "" if request.concurrency == 1 else f" for {request.concurrency} concurrent requests"
    if request.max_model_len is not None:
        why = f"as requested; predicted KV cache {memory.kv_cache_tokens} tokens" + (" (accepted)" if accepted else "")
    elif length >= target:
        why = f"{cap}; the predicted KV cache holds {memory.kv_cache_tokens} tokens{per_request}"
    elif length == 0:
        why = "no context fits (see problems)"
    else:
        why = (f"the longest the predicted KV cache ({memory.kv_cache_tokens} tokens) holds{per_request}, in "
               f"multiples of {profile.block_size} (below {cap}, {target})")
    return Reason("max_model_len", str(length), why)


def _eager_reason(profile: VllmProfile, request: SizingRequest, eager: bool, eager_why: str) -> Reason:
    if request.enforce_eager is not None:
        return Reason("enforce_eager", str(request.enforce_eager).lower(), "as requested")
    if eager:
        return Reason("enforce_eager", "true", eager_why or (f"the CUDA-graph estimate vLLM {profile.version} "
                                                             "subtracts would cost the context the target needs"))
    return Reason("enforce_eager", "false", "CUDA graphs fit (faster decoding)")


def _batch_reasons(profile: VllmProfile, gpus: GpuSpec, request: SizingRequest, settings: EngineSettings,
                   length: int) -> tuple[list[Reason], list[str]]:
    """max_num_seqs and max_num_batched_tokens: their reasons, and which are vLLM's defaults (assumed)."""
    reasons, assumed = [], []
    seqs, tokens = str(settings.max_num_seqs), str(settings.max_num_batched_tokens)
    if request.max_num_seqs is None:
        assumed.append("max_num_seqs")
        reasons.append(Reason("max_num_seqs", seqs, f"vLLM {profile.version} {profile.engine} default for "
                              f"{gpus.name} ({gib(gpus.cuda_total_bytes)})"))
    else:
        reasons.append(Reason("max_num_seqs", seqs, "as requested"))
    if request.max_num_batched_tokens is None:
        assumed.append("max_num_batched_tokens")
        how = ("the vllm serve default for this GPU" if profile.engine == "V1" else
               "chunked prefill's size" if profile.chunked_prefill(length) else "max(max_model_len, 2048)")
        reasons.append(Reason("max_num_batched_tokens", tokens, f"{how} (sizes the profiled activation peak)"))
    else:
        reasons.append(Reason("max_num_batched_tokens", tokens, "as requested"))
    return reasons, assumed


def _notes(model: ModelSpec, profile: VllmProfile, memory: MemoryEstimate,
           cpu_notes: tuple[str, ...]) -> tuple[str, ...]:
    notes = [*model.notes, *cpu_notes]
    if model.rough:
        notes.append("estimate is rough for this architecture (see notes); it errs low")
    if profile.measured_memory and not memory.calibrated:
        notes.append(f"uncalibrated: vLLM {profile.version}'s memory terms were measured on H200s at TP 1 for "
                     "Llama, Mistral, Qwen2, Qwen3, Phi-3 and Qwen MoE models, at TP 2 for Qwen2 ones; for this model, "
                     f"TP or GPU the figure keeps an allowance ({gib(memory.safety_margin)}) and errs low")
    return tuple(notes)
