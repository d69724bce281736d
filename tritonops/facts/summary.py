"""Short human summaries of facts, e.g. '8× H200 140 GiB NVLink' (pure)."""

from __future__ import annotations

from itertools import groupby

from tritonops.facts.model import GpuFacts, NvidiaFacts
from tritonops.units import GIB, gib

_VENDOR_PREFIXES = ("NVIDIA ", "GeForce ", "Tesla ", "Quadro ")


def short_gpu_name(name: str) -> str:
    """'NVIDIA GeForce RTX 2080 Ti' -> 'RTX 2080 Ti' (names may carry several vendor prefixes)."""
    stripped = True
    while stripped:
        stripped = False
        for prefix in _VENDOR_PREFIXES:
            if name.startswith(prefix):
                name, stripped = name[len(prefix):], True
    return name


def interconnect(nvidia: NvidiaFacts) -> str:
    """NVLink when every pair of GPUs is NVLinked, PCIe otherwise ('' for one GPU)."""
    if len(nvidia.gpus) < 2:
        return ""
    if nvidia.links and all(link.kind.startswith("NV") for link in nvidia.links):
        return "NVLink"
    if any(link.kind.startswith("NV") for link in nvidia.links):
        return "partial NVLink"
    return "PCIe"


def gpu_summary(nvidia: NvidiaFacts) -> str:
    if not nvidia.gpus:
        return "no GPUs"

    def key(gpu: GpuFacts):
        return (gpu.name, round(gpu.memory_total_bytes / GIB))

    parts = [f"{len(list(group))}× {short_gpu_name(name)} {size} GiB"
             for (name, size), group in groupby(sorted(nvidia.gpus, key=key), key=key)]
    link = interconnect(nvidia)
    return " + ".join(parts) + (f" {link}" if link else "")


def free_vram_summary(nvidia: NvidiaFacts) -> str:
    """Free memory of the least free GPU: what a model placed on any GPU can count on."""
    if not nvidia.gpus:
        return "-"
    least = min(nvidia.gpus, key=lambda gpu: gpu.memory_free_bytes)
    busy = sum(1 for gpu in nvidia.gpus if gpu.processes)
    text = gib(least.memory_free_bytes, 1) + (" min" if len(nvidia.gpus) > 1 else "")
    return text + (f", {busy} GPU(s) busy" if busy else "")


def compute_capabilities(nvidia: NvidiaFacts) -> str:
    return ",".join(sorted({gpu.compute_capability_str for gpu in nvidia.gpus})) or "-"
