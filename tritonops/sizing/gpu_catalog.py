"""Known GPU cards: memory as NVML and as CUDA report it, and compute capability.

vLLM budgets from CUDA's total (`torch.cuda.mem_get_info()[1]`), which is NVML's total
minus what the driver reserves. Sources, per entry:
- "fixture": measured on a real card (`shared/fixtures/nvml/`, H200).
- "reference": the total vLLM printed in a log cited by reference/vllm-memory.md 1.12.
- "torch": the total PyTorch commonly prints for the card ("X GiB total capacity").
- "estimate": NVML total minus TYPICAL_RESERVED_FRACTION (no reading available).
Where two readings exist for one card, the smaller is kept: a larger total would promise
KV cache the card does not have.
"""

from __future__ import annotations

from dataclasses import dataclass

from tritonops.units import GIB, MIB

# H200 fixture: NVML v2 reserved 644,939,776 B of 150,754,820,096 B = 0.43 %; older and
# consumer cards reserve relatively more (A100-80GB: ~1 %), so estimates use 1.5 %.
TYPICAL_RESERVED_FRACTION = 0.015


@dataclass(frozen=True)
class GpuModel:
    key: str
    nvml_names: tuple[str, ...]
    memory_total_bytes: int     # NVML
    cuda_total_bytes: int       # what vLLM budgets from
    compute_capability: tuple[int, int]
    source: str


def _gib(x: float) -> int:
    return int(x * GIB)


def _est(nvml_mib: int) -> int:
    return int(nvml_mib * MIB * (1 - TYPICAL_RESERVED_FRACTION))


GPU_CATALOG: dict[str, GpuModel] = {g.key: g for g in (
    GpuModel("t4", ("Tesla T4", "NVIDIA T4"), 15360 * MIB, _gib(14.74), (7, 5), "torch"),
    GpuModel("v100-16gb", ("Tesla V100-SXM2-16GB", "Tesla V100-PCIE-16GB", "Tesla V100S-PCIE-16GB"),
             16384 * MIB, _gib(15.77), (7, 0), "torch"),
    GpuModel("v100-32gb", ("Tesla V100-SXM2-32GB", "Tesla V100-PCIE-32GB", "Tesla V100S-PCIE-32GB"),
             32768 * MIB, _gib(31.74), (7, 0), "torch"),
    GpuModel("2080ti", ("NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti"), 11264 * MIB,
             _gib(10.75), (7, 5), "torch"),
    GpuModel("3090", ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090"), 24576 * MIB, _gib(23.58),
             (8, 6), "reference"),
    # same 24 GiB class as the 3090; the 3090's cited CUDA total is the smaller reading
    GpuModel("4090", ("NVIDIA GeForce RTX 4090",), 24564 * MIB, _gib(23.58), (8, 9), "reference"),
    GpuModel("a10", ("NVIDIA A10", "NVIDIA A10G"), 23028 * MIB, _est(23028), (8, 6), "estimate"),
    GpuModel("l4", ("NVIDIA L4",), 23034 * MIB, _est(23034), (8, 9), "estimate"),
    GpuModel("l40s", ("NVIDIA L40S",), 46068 * MIB, _est(46068), (8, 9), "estimate"),
    GpuModel("a6000", ("NVIDIA RTX A6000",), 49140 * MIB, _gib(47.53), (8, 6), "torch"),
    GpuModel("a100-40gb", ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB"), 40960 * MIB,
             _gib(39.38), (8, 0), "reference"),
    GpuModel("a100-80gb", ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe"), 81920 * MIB,
             _gib(79.14), (8, 0), "torch"),
    GpuModel("h100", ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100"), 81559 * MIB,
             _gib(79.11), (9, 0), "torch"),
    GpuModel("h200", ("NVIDIA H200",), 150_754_820_096, 150_109_880_320, (9, 0), "fixture"),
)}


def find_gpu(name: str) -> GpuModel | None:
    """A catalog key ('a100-80gb') or an NVML name ('NVIDIA GeForce RTX 4090'), any case."""
    wanted = name.strip().lower()
    if wanted in GPU_CATALOG:
        return GPU_CATALOG[wanted]
    for gpu in GPU_CATALOG.values():
        if any(wanted == n.lower() for n in gpu.nvml_names):
            return gpu
    return None
