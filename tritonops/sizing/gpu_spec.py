"""`GpuSpec`: the GPUs one vLLM engine can use, from probe facts, the catalog or numbers."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tritonops.errors import InputError
from tritonops.sizing.gpu_catalog import GPU_CATALOG, find_gpu
from tritonops.units import GIB
from tritonops.values.numbers import real_number, whole_number

if TYPE_CHECKING:
    from tritonops.facts.model import HostFacts  # only named: the CLI's parser imports this module

# the most GPUs one host (one vLLM engine's tensor-parallel group) is taken to have: the
# largest single nodes have 8-16; a bigger count is a typo, and sizing loops over the counts
MAX_GPUS_PER_HOST = 64
MAX_GPU_MEMORY_GIB = 4096.0


@dataclass(frozen=True)
class GpuSpec:
    """`count` identical GPUs (a mixed host is described by its weakest card).

    `free_bytes` is the smallest free memory over the GPUs as NVML saw it; None means
    "assume idle". `other_process_bytes` is the largest memory other processes hold on one
    of them."""

    name: str
    count: int
    memory_total_bytes: int
    cuda_total_bytes: int
    compute_capability: tuple[int, int]
    free_bytes: int | None = None
    other_process_bytes: int = 0
    source: str = "catalog"

    @property
    def cc_str(self) -> str:
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"

    def with_count(self, count: int) -> "GpuSpec":
        return GpuSpec(self.name, count, self.memory_total_bytes, self.cuda_total_bytes,
                       self.compute_capability, self.free_bytes, self.other_process_bytes, self.source)


def gpu_count(value, where: str | None = None) -> int:
    """A number of GPUs on one host: 1 to MAX_GPUS_PER_HOST."""
    return whole_number(value, "GPU count", where, maximum=MAX_GPUS_PER_HOST)


def gpu_spec_from_catalog(spec: str, count_given=None) -> GpuSpec:
    """`NAME[:COUNT]`, NAME a catalog key or a full NVML name; `count_given` (`--gpus`) is the count when
    the spec has none, and must equal the spec's when it has one."""
    name, colon, count_text = spec.strip().rpartition(":")
    if not colon:
        name, count_text = count_text, "1"
    count = gpu_count(count_text, "--gpu")
    if count_given is not None:
        given = gpu_count(count_given, "--gpus")
        if colon and given != count:
            raise InputError(f"{given} GPUs, but --gpu {spec.strip()} says {count}: give the count once", "--gpus")
        count = given
    gpu = find_gpu(name)
    if gpu is None:
        raise InputError(f"unknown GPU '{name}'; known: {', '.join(GPU_CATALOG)} (or a full NVML name, "
                         "or --gpu-memory-gib with --compute-capability)", "--gpu")
    return GpuSpec(name=gpu.nvml_names[0], count=count, memory_total_bytes=gpu.memory_total_bytes,
                   cuda_total_bytes=gpu.cuda_total_bytes, compute_capability=gpu.compute_capability,
                   source=f"catalog:{gpu.key} ({gpu.source})")


def gpu_spec_from_numbers(memory_gib: float, compute_capability: str, count: int = 1) -> GpuSpec:
    """Any other card: `memory_gib` is taken as the CUDA total (what vLLM budgets from)."""
    match = re.match(r"^(\d+)\.(\d+)$", str(compute_capability).strip())
    if not match:
        raise InputError(f"'{compute_capability}' is not a compute capability like 8.6", "--compute-capability")
    memory_gib = real_number(memory_gib, "GPU memory (GiB)", "--gpu-memory-gib", maximum=MAX_GPU_MEMORY_GIB)
    count = gpu_count(count, "--gpus")
    total = int(memory_gib * GIB)
    return GpuSpec(name=f"custom {memory_gib:g} GiB", count=count, memory_total_bytes=total,
                   cuda_total_bytes=total, compute_capability=(int(match.group(1)), int(match.group(2))),
                   source="manual")


def gpu_spec_from_facts(facts: HostFacts, where: str = "probe facts") -> GpuSpec | None:
    """The host's GPUs as one spec; None when the host has none. A saved report is a file like
    any other: its counts and byte totals are checked (InputError at `where`)."""
    gpus = facts.nvidia.gpus
    if not gpus:
        return None
    gpu_count(len(gpus), where)
    most = int(MAX_GPU_MEMORY_GIB * GIB)
    for g in gpus:
        whole_number(g.cuda_total_bytes, f"GPU {g.index} cuda_total_bytes", where, maximum=most)
        whole_number(g.memory_total_bytes, f"GPU {g.index} memory_total_bytes", where, maximum=most)
        whole_number(g.memory_free_bytes, f"GPU {g.index} memory_free_bytes", where, minimum=0, maximum=most)
        for p in g.processes:
            if p.used_memory_bytes is not None:
                whole_number(p.used_memory_bytes, f"GPU {g.index} process used_memory_bytes", where,
                             minimum=0, maximum=most)
    weakest = min(gpus, key=lambda g: (g.cuda_total_bytes, g.compute_capability))
    cc = min(g.compute_capability for g in gpus)
    others = max((sum(p.used_memory_bytes or 0 for p in g.processes) for g in gpus), default=0)
    # NVML's free counts nothing of a CUDA context yet; other processes show in `used`
    free = min(g.memory_free_bytes for g in gpus)
    names = sorted({g.name for g in gpus})
    name = weakest.name if len(names) == 1 else f"{weakest.name} (weakest of {', '.join(names)})"
    return GpuSpec(name=name, count=len(gpus), memory_total_bytes=weakest.memory_total_bytes,
                   cuda_total_bytes=min(g.cuda_total_bytes for g in gpus), compute_capability=cc,
                   free_bytes=free, other_process_bytes=others, source="probe")
