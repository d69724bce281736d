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
    """The probe's output could not be read (a broken host Python, a truncated stream, a wrong value)."""


_REQUIRED = object()


class _Object:
    """One JSON object of the probe's output, read field by field, each value's type checked: a host's
    output is untrusted, and the facts classes are plain dataclasses that check nothing themselves."""

    def __init__(self, raw: Any, where: str):
        if not isinstance(raw, dict):
            raise ProbeOutputError(f"probe printed a bad {where}: {_shown(raw)} is not an object")
        self.raw, self.where = raw, where

    def _value(self, key: str, kinds: tuple[type, ...], default: Any) -> Any:
        value = self.raw.get(key, default)
        if value is _REQUIRED:
            raise ProbeOutputError(f"probe printed no {self.where}.{key}")
        if value is not default and (not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool))):
            raise ProbeOutputError(f"probe printed a bad {self.where}.{key}: {_shown(value)}")
        return value

    def integer(self, key: str, default: Any = _REQUIRED) -> Any:
        return self._value(key, (int,), default)

    def text(self, key: str, default: Any = _REQUIRED) -> Any:
        return self._value(key, (str,), default)

    def flag(self, key: str) -> bool:
        return self._value(key, (bool,), False)

    def array(self, key: str) -> list:
        return self._value(key, (list,), None) or []

    def texts(self, key: str) -> tuple[str, ...]:
        values = self.array(key)
        for value in values:
            if not isinstance(value, str):
                raise ProbeOutputError(f"probe printed a bad {self.where}.{key}: {_shown(value)} is not text")
        return tuple(values)

    def object(self, key: str) -> "_Object":
        return _Object(self.raw.get(key) or {}, f"{self.where}.{key}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_probe_output(text: str) -> HostFacts:
    try:
        raw = json.loads(text.strip().splitlines()[-1]) if text.strip() else None
    except (ValueError, RecursionError) as exc:
        raise ProbeOutputError(f"probe printed something that is not JSON: {text.strip()[-200:]!r}") from exc
    if not isinstance(raw, dict) or "system" not in raw:
        raise ProbeOutputError("probe printed no report")
    return HostFacts(
        system=parse_system(raw["system"]),
        nvidia=parse_nvml(raw.get("nvml") or {}),
        docker=parse_docker(raw.get("docker") or {}),
    )


def parse_system(raw: dict[str, Any]) -> SystemFacts:
    fields = _Object(raw, "system")
    return SystemFacts(
        hostname=fields.text("hostname"),
        kernel=fields.text("kernel"),
        os=fields.text("os"),
        cpu_count=fields.integer("cpu_count"),
        ram_total_bytes=fields.integer("ram_total"),
        ram_available_bytes=fields.integer("ram_available"),
        python=fields.text("python"),
        disk_path=fields.text("disk_path"),
        disk_free_bytes=fields.integer("disk_free"),
        disk_total_bytes=fields.integer("disk_total"),
    )


def parse_docker(raw: dict[str, Any]) -> DockerFacts:
    fields = _Object(raw, "docker")
    toolkit = fields.texts("toolkit")
    return DockerFacts(
        present=fields.flag("present"),
        version=fields.text("version", None),
        error=fields.text("error", None),
        nvidia_runtime="nvidia" in fields.texts("runtimes"),
        nvidia_container_toolkit=any(name in toolkit for name in TOOLKIT_EXECUTABLES),
    )


def cuda_version_text(value: int | None) -> str | None:
    """NVML gives the CUDA driver version as 1000*major + 10*minor (13000 → '13.0')."""
    if value is None:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def parse_gpu(raw: dict[str, Any]) -> GpuFacts:
    fields = _Object(raw, "GPU")
    index = fields.integer("index")
    fields.where = f"GPU {index}"
    memory = fields.object("memory")
    memory_v2 = fields.object("memory_v2")
    total = memory.integer("total", 0)
    reserved = memory_v2.integer("reserved", None)
    mig = fields.array("mig_mode")
    persistence = fields.integer("persistence", None)
    cc = fields.array("cc") or [0, 0]
    if len(cc) != 2 or not all(isinstance(part, int) and not isinstance(part, bool) for part in cc):
        raise ProbeOutputError(f"probe printed a bad {fields.where}.cc: {_shown(cc)}")
    return GpuFacts(
        index=index,
        name=fields.text("name", None) or "unknown",
        uuid=fields.text("uuid", None) or "",
        pci_bus_id=fields.text("pci_bus_id", None) or "",
        memory_total_bytes=total,
        memory_free_bytes=memory.integer("free", 0),
        memory_used_bytes=memory.integer("used", 0),
        memory_reserved_bytes=reserved,
        cuda_total_bytes=total - (reserved or 0),
        compute_capability=(cc[0], cc[1]),
        mig_enabled=bool(mig[0]) if mig else None,
        persistence_mode=bool(persistence) if persistence is not None else None,
        nvlink_active_links=sum(1 for state in fields.array("nvlink") if state),
        processes=tuple(parse_process(process, fields.where) for process in fields.array("processes")),
        errors=fields.texts("errors"),
    )


def parse_process(raw: Any, where: str) -> GpuProcess:
    fields = _Object(raw, f"{where} process")
    return GpuProcess(pid=fields.integer("pid"), used_memory_bytes=fields.integer("used_memory", None),
                      kind=fields.text("kind", "compute"))


def link_kind(a: GpuFacts, b: GpuFacts, ancestor: Any) -> str:
    """Like `nvidia-smi topo -m`: NV<n> when both GPUs have active NVLinks
    (NVSwitch systems connect every pair), else the PCIe common ancestor."""
    if a.nvlink_active_links and b.nvlink_active_links:
        return f"NV{min(a.nvlink_active_links, b.nvlink_active_links)}"
    if isinstance(ancestor, int):
        return TOPOLOGY_LABELS.get(ancestor, "?")
    return "?"


def _cell(matrix: list, i: int, j: int) -> Any:
    row = matrix[i] if i < len(matrix) else None
    return row[j] if isinstance(row, list) and j < len(row) else None


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
    fields = _Object(raw, "nvml")
    if raw.get("error"):
        return NvidiaFacts(error=fields.text("error"))
    gpus = tuple(parse_gpu(gpu) for gpu in fields.array("gpus"))
    errors = fields.texts("errors")
    return NvidiaFacts(
        driver_version=fields.text("driver", None),
        nvml_version=fields.text("nvml", None),
        cuda_driver_version=cuda_version_text(fields.integer("cuda_driver", None)),
        gpus=gpus,
        links=parse_links(gpus, fields.array("topology"), fields.array("p2p_read")),
        error="; ".join(errors) if errors else None,
    )
