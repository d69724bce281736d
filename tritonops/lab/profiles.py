"""GPU profiles: what each simulated host's GPUs look like to NVML. Data only.

Numbers come from real cards. The H200 values are those captured in
`fixtures/nvml/` (nvml-h200x*.json, nvidia-smi -q); for the other cards the NVML
totals, compute capabilities, NVLink counts and PCI ids are the published/observed
values, and `reserved` (NVML v2) is an estimate of the driver's reservation where no
capture exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MiB = 1024 * 1024
GiB = 1024 * MiB

# nvmlGpuTopologyLevel_t
TOPOLOGY_HOSTBRIDGE = 30
TOPOLOGY_NODE = 40
TOPOLOGY_SYSTEM = 50


@dataclass(frozen=True)
class Card:
    """One GPU model as NVML reports it."""

    name: str
    memory_total: int
    memory_reserved: int
    cc: tuple[int, int]
    nvlinks: int
    pci_device_id: int
    pci_subsystem_id: int
    bar1_total: int
    power_limit_mw: int
    temperature_c: int
    mig_capable: bool = False


@dataclass(frozen=True)
class Driver:
    version: str
    nvml: str
    cuda: int  # nvmlSystemGetCudaDriverVersion, e.g. 12040 = CUDA 12.4


@dataclass(frozen=True)
class GpuProfile:
    name: str
    card: Card | None
    count: int
    driver: Driver | None
    topology: int = TOPOLOGY_SYSTEM  # nvmlDeviceGetTopologyCommonAncestor between two GPUs
    pci_bus_ids: tuple[str, ...] = field(default=())
    p2p_status: int = 0  # nvmlDeviceGetP2PStatus; 0 = OK

    @property
    def has_driver(self) -> bool:
        return self.card is not None and self.count > 0

    def bus_id(self, index: int) -> str:
        if index < len(self.pci_bus_ids):
            return self.pci_bus_ids[index]
        return f"00000000:{0x18 + 0x10 * index:02X}:00.0"


RTX_2080_TI = Card("NVIDIA GeForce RTX 2080 Ti", 11264 * MiB, 197 * MiB, (7, 5), 0, 0x1E0710DE, 0x12FA10DE,
                   256 * MiB, 250_000, 34)
RTX_3090 = Card("NVIDIA GeForce RTX 3090", 24576 * MiB, 260 * MiB, (8, 6), 0, 0x220410DE, 0x161310DE,
                32 * GiB, 350_000, 36)
RTX_4090 = Card("NVIDIA GeForce RTX 4090", 24564 * MiB, 323 * MiB, (8, 9), 0, 0x268410DE, 0x16F310DE,
                32 * GiB, 450_000, 35)
T4 = Card("Tesla T4", 15360 * MiB, 255 * MiB, (7, 5), 0, 0x1EB810DE, 0x12A210DE, 256 * MiB, 70_000, 30)
L4 = Card("NVIDIA L4", 23034 * MiB, 306 * MiB, (8, 9), 0, 0x27B810DE, 0x16CA10DE, 32 * GiB, 72_000, 33)
A10 = Card("NVIDIA A10", 23028 * MiB, 288 * MiB, (8, 6), 0, 0x223610DE, 0x148210DE, 32 * GiB, 150_000, 31)
A100_40 = Card("NVIDIA A100-SXM4-40GB", 40960 * MiB, 542 * MiB, (8, 0), 12, 0x20B010DE, 0x134F10DE,
               64 * GiB, 400_000, 30, mig_capable=True)
A100_80 = Card("NVIDIA A100-SXM4-80GB", 81920 * MiB, 567 * MiB, (8, 0), 12, 0x20B210DE, 0x147F10DE,
               128 * GiB, 400_000, 31, mig_capable=True)
H100 = Card("NVIDIA H100 80GB HBM3", 81559 * MiB, 579 * MiB, (9, 0), 18, 0x233010DE, 0x16C110DE,
            128 * GiB, 700_000, 30, mig_capable=True)
# From fixtures/nvml/nvml-h200x2.json and nvidia-smi-q-h200x2.txt.
H200 = Card("NVIDIA H200", 150_754_820_096, 644_939_776, (9, 0), 18, 0x233510DE, 0x18BF10DE,
            274_877_906_944, 700_000, 32, mig_capable=True)

DRIVER_550 = Driver("550.120", "12.550.120", 12040)
DRIVER_535 = Driver("535.183.01", "12.535.183.01", 12020)
DRIVER_560 = Driver("560.35.03", "12.560.35.03", 12060)
DRIVER_570 = Driver("570.124.06", "12.570.124.06", 12080)
DRIVER_580 = Driver("580.159.04", "13.580.159.04", 13000)  # fixtures/nvml

# The H200 VM in the fixtures: GPUs at 00:06.0, 00:07.0, ... behind one host bridge.
_H200_BUS_IDS = tuple(f"00000000:00:{6 + i:02X}.0" for i in range(8))
# A DGX A100/H100 board layout.
_DGX_BUS_IDS = ("00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
                "00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0")


def _h200(count: int) -> GpuProfile:
    return GpuProfile(f"h200x{count}", H200, count, DRIVER_580, TOPOLOGY_HOSTBRIDGE, _H200_BUS_IDS)


PROFILES: dict[str, GpuProfile] = {p.name: p for p in (
    GpuProfile("2080ti", RTX_2080_TI, 1, DRIVER_550, pci_bus_ids=("00000000:01:00.0",)),
    GpuProfile("3090", RTX_3090, 1, DRIVER_560, pci_bus_ids=("00000000:01:00.0",)),
    GpuProfile("4090", RTX_4090, 1, DRIVER_560, pci_bus_ids=("00000000:01:00.0",)),
    GpuProfile("t4", T4, 1, DRIVER_535, pci_bus_ids=("00000000:00:1E.0",)),
    GpuProfile("l4", L4, 1, DRIVER_550, pci_bus_ids=("00000000:00:03.0",)),
    GpuProfile("a10", A10, 1, DRIVER_550, pci_bus_ids=("00000000:00:1E.0",)),
    GpuProfile("a100-40gbx1", A100_40, 1, DRIVER_550, pci_bus_ids=_DGX_BUS_IDS),
    GpuProfile("a100x4", A100_80, 4, DRIVER_550, TOPOLOGY_SYSTEM, _DGX_BUS_IDS),
    GpuProfile("h100x8", H100, 8, DRIVER_570, TOPOLOGY_SYSTEM, _DGX_BUS_IDS),
    _h200(1),
    _h200(2),
    _h200(8),
    GpuProfile("nogpu", None, 0, None),
)}


def get_profile(name: str) -> GpuProfile:
    from tritonops.errors import InputError

    try:
        return PROFILES[name]
    except KeyError:
        raise InputError(f"unknown GPU profile '{name}'; known: {', '.join(sorted(PROFILES))}") from None
