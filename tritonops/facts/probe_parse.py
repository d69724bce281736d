"""Turn the probe program's raw JSON into `HostFacts` (pure: no I/O)."""

from __future__ import annotations

import json
from typing import Any

from tritonops.facts.model import (
    DockerFacts,
    GpuFacts,
    GpuLink,
    GpuProcess,
    HostFacts,
    NvidiaFacts,
    SystemFacts,
)

# nvmlGpuTopologyLevel_t → the labels `nvidia-smi topo -m` prints.
TOPOLOGY_LABELS = {0: "BOARD", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
TOOLKIT_EXECUTABLES = ("nvidia-container-runtime-hook", "nvidia-ctk", "nvidia-container-toolkit")


class ProbeOutputError(ValueError):
    """The probe's output could not be read (a broken host Python, a truncated stream)."""


def parse_probe_output(text: str) -> HostFacts:
    try:
        raw = json.loads(text.strip().splitlines()[-1]) if text.strip() else None
    except ValueError as exc:
        raise ProbeOutputError(f"probe printed something that is not JSON: {text.strip()[-200:]!r}") from exc
    if not isinstance(raw, dict) or "system" not in raw:
        raise ProbeOutputError("probe printed no report")
    return HostFacts(
        system=parse_system(raw["system"]),
        nvidia=parse_nvml(raw.get("nvml") or {}),
        docker=parse_docker(raw.get("docker") or {}),
    )


def parse_system(raw: dict[str, Any]) -> SystemFacts:
    return SystemFacts(
        hostname=raw["hostname"],
        kernel=raw["kernel"],
        os=raw["os"],
        cpu_count=raw["cpu_count"],
        ram_total_bytes=raw["ram_total"],
        ram_available_bytes=raw["ram_available"],
        python=raw["python"],
        disk_path=raw["disk_path"],
        disk_free_bytes=raw["disk_free"],
        disk_total_bytes=raw["disk_total"],
    )


def parse_docker(raw: dict[str, Any]) -> DockerFacts:
    toolkit = raw.get("toolkit") or []
    return DockerFacts(
        present=bool(raw.get("present")),
        version=raw.get("version"),
        error=raw.get("error"),
        nvidia_runtime="nvidia" in (raw.get("runtimes") or []),
        nvidia_container_toolkit=any(name in toolkit for name in TOOLKIT_EXECUTABLES),
    )


def cuda_version_text(value: int | None) -> str | None:
    """NVML gives the CUDA driver version as 1000*major + 10*minor (13000 → '13.0')."""
    if value is None:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def parse_gpu(raw: dict[str, Any]) -> GpuFacts:
    errors = list(raw.get("errors") or [])
    memory = raw.get("memory") or {}
    memory_v2 = raw.get("memory_v2") or None
    total = memory.get("total", 0)
    reserved = memory_v2.get("reserved") if memory_v2 else None
    mig = raw.get("mig_mode")
    persistence = raw.get("persistence")
    cc = raw.get("cc") or (0, 0)
    return GpuFacts(
        index=raw["index"],
        name=raw.get("name") or "unknown",
        uuid=raw.get("uuid") or "",
        pci_bus_id=raw.get("pci_bus_id") or "",
        memory_total_bytes=total,
        memory_free_bytes=memory.get("free", 0),
        memory_used_bytes=memory.get("used", 0),
        memory_reserved_bytes=reserved,
        cuda_total_bytes=total - (reserved or 0),
        compute_capability=(int(cc[0]), int(cc[1])),
        mig_enabled=bool(mig[0]) if mig else None,
        persistence_mode=bool(persistence) if persistence is not None else None,
        nvlink_active_links=sum(1 for state in raw.get("nvlink") or () if state),
        processes=tuple(
            GpuProcess(pid=p["pid"], used_memory_bytes=p.get("used_memory"), kind=p.get("kind", "compute"))
            for p in raw.get("processes") or ()
        ),
        errors=tuple(errors),
    )


def link_kind(a: GpuFacts, b: GpuFacts, ancestor: Any) -> str:
    """Like `nvidia-smi topo -m`: NV<n> when both GPUs have active NVLinks
    (NVSwitch systems connect every pair), else the PCIe common ancestor."""
    if a.nvlink_active_links and b.nvlink_active_links:
        return f"NV{min(a.nvlink_active_links, b.nvlink_active_links)}"
    if isinstance(ancestor, int):
        return TOPOLOGY_LABELS.get(ancestor, "?")
    return "?"


def _cell(matrix: list, i: int, j: int) -> Any:
    try:
        return matrix[i][j]
    except (IndexError, TypeError):
        return None


def parse_links(gpus: tuple[GpuFacts, ...], topology: list, p2p_read: list) -> tuple[GpuLink, ...]:
    links = []
    for i, a in enumerate(gpus):
        for j in range(i + 1, len(gpus)):
            b = gpus[j]
            p2p = _cell(p2p_read, i, j)
            links.append(GpuLink(
                a=a.index, b=b.index,
                kind=link_kind(a, b, _cell(topology, i, j)),
                p2p_read=(p2p == 0) if isinstance(p2p, int) else None,
            ))
    return tuple(links)


def parse_nvml(raw: dict[str, Any]) -> NvidiaFacts:
    if raw.get("error"):
        return NvidiaFacts(error=raw["error"])
    gpus = tuple(parse_gpu(gpu) for gpu in raw.get("gpus") or ())
    errors = raw.get("errors") or []
    return NvidiaFacts(
        driver_version=raw.get("driver"),
        nvml_version=raw.get("nvml"),
        cuda_driver_version=cuda_version_text(raw.get("cuda_driver")),
        gpus=gpus,
        links=parse_links(gpus, raw.get("topology") or [], raw.get("p2p_read") or []),
        error="; ".join(errors) if errors else None,
    )
