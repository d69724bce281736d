"""What the engines of one host share: the GPUs and the host's RAM. Pure checks over the planned
engines; each returns a problem (one line with the numbers) or None.

GPUs. With `instance_group [{kind: KIND_MODEL}]` vLLM places itself, and every engine starts on
GPUs 0..TP-1, so several engines on one host always share GPU 0. tritonops does not split the
GPUs between them; it sizes each engine for the host's GPUs and asks that the user set each
engine's gpu_memory_utilization, checked to fit together: the sum of the fractions, plus a CUDA
context per engine, must stay within the free memory of the weakest GPU (vLLM 0.9.1+ refuses to
start an engine when free memory is below its share). One engine per host needs nothing.

RAM. CPU memory for the KV cache (swap_space on V0, kv_offloading_size) is pinned host memory,
summed over every engine on the host. It must fit in the RAM minus a headroom for everything
else: max(8 GiB, 10 % of RAM) for the OS, Docker and Triton, plus 4 GiB per vLLM worker process
(one per GPU of each engine: torch, CUDA host allocations, tokenizer).
"""

from __future__ import annotations

from dataclasses import dataclass

from tritonops.sizing.gpu_spec import GpuSpec
from tritonops.sizing.memory_model import CUDA_CONTEXT_BYTES
from tritonops.units import GIB, gib

OS_HEADROOM_MIN = 8 * GIB
OS_HEADROOM_SHARE = 0.10
WORKER_HEADROOM = 4 * GIB


@dataclass(frozen=True)
class Engine:
    """One planned engine as these checks see it."""

    label: str                        # e.g. "chat version 1"
    gpu_memory_utilization: float | None   # given by the user; None: left to sizing
    tensor_parallel_size: int
    cpu_kv_cache_bytes: int


def shared_gpu_problem(engines: list[Engine], gpus: GpuSpec) -> str | None:
    if len(engines) < 2:
        return None
    free = gpus.free_bytes if gpus.free_bytes is not None else gpus.cuda_total_bytes
    most = max(int((free - len(engines) * CUDA_CONTEXT_BYTES) / gpus.cuda_total_bytes * 100) / 100, 0.0)
    names = ", ".join(e.label for e in engines)
    missing = [e.label for e in engines if e.gpu_memory_utilization is None]
    if missing:
        return (f"{len(engines)} engines ({names}) share the host's GPUs (vLLM starts each on GPUs 0..TP-1): "
                f"set gpu_memory_utilization for each (missing: {', '.join(missing)}) so that they sum to at "
                f"most {most}")
    total = round(sum(e.gpu_memory_utilization for e in engines), 4)
    if total > most:
        shares = " + ".join(f"{e.gpu_memory_utilization:g}" for e in engines)
        return (f"gpu_memory_utilization {shares} = {total:g} is more than the {most} that {len(engines)} "
                f"engines sharing the GPUs can have ({gib(free)} free of {gib(gpus.cuda_total_bytes)} CUDA total "
                f"on {gpus.name}, {gib(CUDA_CONTEXT_BYTES)} CUDA context each)")
    return None


def ram_headroom(ram: int, workers: int) -> int:
    return max(OS_HEADROOM_MIN, int(OS_HEADROOM_SHARE * ram)) + workers * WORKER_HEADROOM


def host_ram_check(engines: list[Engine], ram: int | None) -> tuple[str | None, str | None]:
    """(problem, note): the CPU KV cache of every engine against the host's RAM."""
    total = sum(e.cpu_kv_cache_bytes for e in engines)
    if total <= 0:
        return None, None
    if not ram:
        return (f"{gib(total)} of CPU KV cache asked for, but the host's RAM is not known (probe it)"), None
    workers = sum(e.tensor_parallel_size for e in engines)
    headroom = ram_headroom(ram, workers)
    budget = max(ram - headroom, 0)
    parts = " + ".join(f"{gib(e.cpu_kv_cache_bytes)} ({e.label})" for e in engines if e.cpu_kv_cache_bytes)
    numbers = (f"the host has {gib(ram)} of RAM, {gib(headroom)} kept for the OS, Triton and {workers} vLLM "
               f"worker(s) (max(8 GiB, 10 %) + 4 GiB each), leaving {gib(budget)}")
    if total > budget:
        return (f"CPU KV cache (swap / offloading) {parts} = {gib(total)} does not fit: {numbers}; lower "
                "tritonops_swap_space_gib (0: none)"), None
    return None, f"CPU KV cache {gib(total)} of {gib(budget)} available: {numbers}"
