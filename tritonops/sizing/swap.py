"""CPU memory for the KV cache, per vLLM version: `swap_space` where the version has it (V0
swaps preempted sequences' blocks there), CPU KV-cache offloading (`kv_offloading_size`) where
it has that. V1 allocates no swap blocks (`num_cpu_blocks = 0`, reference/vllm-memory.md 1.3),
so where a version has both (0.12-0.16) a request for swap becomes offloading. Which version has
which key: engine_arg_keys.py.

Per engine only; the host's total over every engine is checked by planning (host_memory.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tritonops.sizing.engine_plan import Reason
from tritonops.sizing.versions import VllmProfile
from tritonops.units import GIB, gib

VLLM_DEFAULT_SWAP_GIB = 4          # swap_space default, every version that has it
VLLM_SWAP_REFUSED_ABOVE = 0.7      # CacheConfig.verify_with_parallel_config: "Too large swap space"
VLLM_SWAP_WARNS_ABOVE = 0.4        # ... and warns above this share of the host's RAM


@dataclass(frozen=True)
class CpuKvCache:
    swap_space: float | None = None          # written to model.json when not None
    kv_offloading_size: float | None = None  # GiB over all TP ranks, written with backend "native"
    cpu_bytes: int = 0                       # host RAM the engine takes for it
    reasons: tuple[Reason, ...] = ()
    assumed: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def cpu_kv_cache(profile: VllmProfile, tp: int, swap_gib: float | None, ram: int | None,
                 mla: bool = False) -> CpuKvCache:
    """What goes into model.json for CPU KV memory, and the host RAM it takes. `swap_gib`: GiB per
    GPU the user asked for (None: not asked; 0: none); `ram`: the host's RAM (None/0: unknown)."""
    if swap_gib is None:
        return _default(profile, tp, ram)
    if swap_gib == 0:
        if profile.accepts_swap_space:
            return CpuKvCache(swap_space=0, reasons=(Reason("swap_space", "0", "as requested (no CPU swap)"),))
        return CpuKvCache()
    total = swap_gib * tp
    if profile.kv_offloading:
        why = ("vLLM V1 allocates no swap blocks" if profile.accepts_swap_space
               else f"vLLM {profile.version} has no swap_space")
        notes = ("CPU KV-cache offloading is documented for standard attention (GQA/MHA); this model uses "
                 "MLA",) if mla else ()
        return CpuKvCache(kv_offloading_size=_number(total), cpu_bytes=int(total * GIB), notes=notes,
                          reasons=(Reason("kv_offloading_size", str(_number(total)),
                                          f"{_number(swap_gib)} GiB per GPU x TP {tp} of CPU KV-cache offloading "
                                          f"(native), as requested; {why}"),))
    if not profile.accepts_swap_space:
        return CpuKvCache(problems=(f"vLLM {profile.version} has neither swap_space nor kv_offloading_size: "
                                    "no CPU memory for the KV cache (leave tritonops_swap_space_gib out)",))
    problems, notes = [], []
    if ram and total * GIB > VLLM_SWAP_REFUSED_ABOVE * ram:
        problems.append(f"swap_space {_number(swap_gib)} GiB x TP {tp} = {gib(total * GIB)} is more than 70 % of the "
                        f"host's {gib(ram)} RAM: vLLM {profile.version} refuses it (Too large swap space)")
    elif ram and total * GIB > VLLM_SWAP_WARNS_ABOVE * ram:
        notes.append(f"swap_space {_number(swap_gib)} GiB x TP {tp} is more than 40 % of the host's RAM "
                     "(vLLM warns)")
    used = int(total * GIB) if profile.engine == "V0" else 0
    if profile.engine == "V1":
        notes.append(f"vLLM {profile.version} V1 allocates no CPU swap blocks and has no KV-cache offloading: "
                     "swap_space is written but only validated")
    return CpuKvCache(swap_space=_number(swap_gib), cpu_bytes=used, problems=tuple(problems), notes=tuple(notes),
                      reasons=(Reason("swap_space", str(_number(swap_gib)), "as requested (GiB per GPU)"),))


def _default(profile: VllmProfile, tp: int, ram: int | None) -> CpuKvCache:
    """Nothing asked: vLLM's default 4 GiB per GPU where the version has swap_space, lowered to
    int(40 % of RAM / TP) when it would pass vLLM's warning."""
    if not profile.accepts_swap_space:
        return CpuKvCache()
    v0 = profile.engine == "V0"
    if not ram:
        return CpuKvCache(cpu_bytes=VLLM_DEFAULT_SWAP_GIB * tp * GIB if v0 else 0, assumed=("swap_space",),
                          reasons=(Reason("swap_space", None, "vLLM's default 4 GiB per GPU (host RAM unknown)"),))
    limit = VLLM_SWAP_WARNS_ABOVE * ram / tp / GIB
    if VLLM_DEFAULT_SWAP_GIB > limit:
        swap = int(limit)
        return CpuKvCache(swap_space=swap, cpu_bytes=swap * tp * GIB if v0 else 0,
                          reasons=(Reason("swap_space", str(swap), f"4 GiB per GPU x TP {tp} would exceed 40 % of "
                                          f"the host's {gib(ram)} RAM"),))
    return CpuKvCache(cpu_bytes=VLLM_DEFAULT_SWAP_GIB * tp * GIB if v0 else 0,
                      reasons=(Reason("swap_space", None, "vLLM's default 4 GiB per GPU fits the host's RAM"),))
