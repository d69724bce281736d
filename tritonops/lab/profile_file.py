"""Render a host's GPU profile file (key=value lines) that the lab's libnvidia-ml.so.1 reads.

Keys (all optional except gpu_count):
  driver, nvml, cuda_driver        system strings / CUDA driver version (12040 = 12.4)
  init_fail=CODE                   nvmlInit* returns CODE (e.g. 9 = DRIVER_NOT_LOADED)
  fail=CALL:CODE,...               a system-wide call fails with CODE
  gpu_count, topology, p2p         common ancestor level between GPUs, P2P status for all pairs
  topo.I.J=LEVEL                   override the level for one pair
  gpu.N.name|uuid|pci_bus_id|pci_device_id|pci_subsystem_id|memory_total|memory_reserved|cc|
        nvlinks|nvlink_down|persistence|mig|bar1_total|power_limit_mw|temperature_c
  gpu.N.processes=PID:BYTES,...    simulated compute processes (they count as used memory)
  gpu.N.fail=CALL:CODE,...         that call fails on GPU N only (15 = GPU_IS_LOST)
"""

from __future__ import annotations

import hashlib
import uuid as uuidlib
from dataclasses import dataclass, field

from tritonops.lab.profiles import GpuProfile

# Only these error codes make sense to inject (the NVML_ERROR_* values pynvml knows).
NVML_ERROR_NAMES = {1: "UNINITIALIZED", 2: "INVALID_ARGUMENT", 3: "NOT_SUPPORTED", 4: "NO_PERMISSION",
                    6: "NOT_FOUND", 9: "DRIVER_NOT_LOADED", 10: "TIMEOUT", 12: "LIBRARY_NOT_FOUND",
                    15: "GPU_IS_LOST", 16: "RESET_REQUIRED", 18: "LIB_RM_VERSION_MISMATCH",
                    20: "MEMORY", 999: "UNKNOWN"}


@dataclass(frozen=True)
class SimulatedProcess:
    pid: int
    used_bytes: int


@dataclass(frozen=True)
class GpuFaults:
    """What goes wrong on a host: injected NVML errors and busy GPUs."""

    init_fail: int = 0
    system_fail: tuple[tuple[str, int], ...] = ()
    gpu_fail: tuple[tuple[int, str, int], ...] = ()  # (gpu index, call, code)
    processes: tuple[tuple[int, SimulatedProcess], ...] = ()  # (gpu index, process)
    nvlink_down: tuple[tuple[int, int], ...] = ()  # (gpu index, link)
    extra: dict[str, str] = field(default_factory=dict)  # raw key=value overrides, last word


def gpu_uuid(host: str, profile: str, index: int) -> str:
    """Stable per host and GPU, different across hosts (like real cards)."""
    digest = hashlib.sha256(f"{host}/{profile}/{index}".encode()).digest()
    return "GPU-" + str(uuidlib.UUID(bytes=digest[:16]))


def _joined(pairs) -> str:
    return ",".join(f"{a}:{b}" for a, b in pairs)


def render_profile(profile: GpuProfile, host: str, faults: GpuFaults = GpuFaults()) -> str | None:
    """The file's text, or None for a host without an NVIDIA driver (no library, no file)."""
    if not profile.has_driver:
        return None
    card, driver = profile.card, profile.driver
    lines = [f"# tritonops lab GPU profile '{profile.name}' for host {host}",
             f"profile={profile.name}",
             f"driver={driver.version}",
             f"nvml={driver.nvml}",
             f"cuda_driver={driver.cuda}",
             f"gpu_count={profile.count}",
             f"topology={profile.topology}",
             f"p2p={profile.p2p_status}"]
    if faults.init_fail:
        lines.append(f"init_fail={faults.init_fail}")
    if faults.system_fail:
        lines.append(f"fail={_joined(faults.system_fail)}")
    for i in range(profile.count):
        g = f"gpu.{i}."
        lines += [g + "name=" + card.name,
                  g + "uuid=" + gpu_uuid(host, profile.name, i),
                  g + "pci_bus_id=" + profile.bus_id(i),
                  g + f"pci_device_id=0x{card.pci_device_id:08X}",
                  g + f"pci_subsystem_id=0x{card.pci_subsystem_id:08X}",
                  g + f"memory_total={card.memory_total}",
                  g + f"memory_reserved={card.memory_reserved}",
                  g + f"cc={card.cc[0]}.{card.cc[1]}",
                  g + f"nvlinks={card.nvlinks}",
                  g + f"mig={0 if card.mig_capable else -1}",
                  g + "persistence=1",
                  g + f"bar1_total={card.bar1_total}",
                  g + f"power_limit_mw={card.power_limit_mw}",
                  g + f"temperature_c={card.temperature_c}"]
        procs = [(p.pid, p.used_bytes) for idx, p in faults.processes if idx == i]
        if procs:
            lines.append(g + "processes=" + _joined(procs))
        fails = [(call, code) for idx, call, code in faults.gpu_fail if idx == i]
        if fails:
            lines.append(g + "fail=" + _joined(fails))
        down = [str(link) for idx, link in faults.nvlink_down if idx == i]
        if down:
            lines.append(g + "nvlink_down=" + ",".join(down))
    lines += [f"{k}={v}" for k, v in faults.extra.items()]
    return "\n".join(lines) + "\n"


def parse_profile(text: str) -> dict[str, str]:
    """The key=value pairs of a profile file, as the C library reads them (later keys win)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        values[key] = value
    return values
