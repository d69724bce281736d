"""The facts a probe reports about one host, as a versioned, documented schema.

These types are the contract between the probe (which fills them), sizing
(which reads the GPUs) and the CLI (which renders them). `--json` output is
`ProbeReport` (`report_to_json`); its JSON Schema is `docs/probe-schema.json`,
generated from these classes (`python -m tritonops.facts.schema`).

They are frozen standard-library dataclasses, not pydantic models, so that a probe never loads
pydantic (~0.2 s of a 0.5 s probe, docs/performance.md): the probe's parser checks what a host
printed itself (`probe_parse`). pydantic reads the same classes where a report comes from a file
(`report_from_json`, one line per problem) and for the schema; a field's docstring is its
description there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Optional

from tritonops.results import json_data

SCHEMA_VERSION = "tritonops.probe/1"

# pydantic's configuration of every class below (a plain dict: pydantic is not imported for it).
_PYDANTIC_CONFIG = {"extra": "forbid", "use_attribute_docstrings": True}


@dataclass(frozen=True, kw_only=True)
class GpuProcess:
    __pydantic_config__ = _PYDANTIC_CONFIG

    pid: int
    used_memory_bytes: Optional[int] = None
    """None where NVML cannot tell"""
    kind: str = "compute"
    """compute or graphics"""


@dataclass(frozen=True, kw_only=True)
class GpuFacts:
    __pydantic_config__ = _PYDANTIC_CONFIG

    index: int
    name: str
    """as NVML reports it, e.g. 'NVIDIA H200'"""
    uuid: str
    pci_bus_id: str
    memory_total_bytes: int
    """NVML total (nvmlDeviceGetMemoryInfo)"""
    memory_free_bytes: int
    memory_used_bytes: int
    memory_reserved_bytes: Optional[int] = None
    """NVML v2 'reserved' (driver/firmware); None where v2 is not available"""
    cuda_total_bytes: int
    """what CUDA (torch.cuda.mem_get_info) reports as total: NVML total minus reserved; vLLM budgets from this"""
    compute_capability: tuple[int, int]
    mig_enabled: Optional[bool] = None
    persistence_mode: Optional[bool] = None
    nvlink_active_links: int = 0
    processes: tuple[GpuProcess, ...] = ()
    errors: tuple[str, ...] = ()
    """NVML calls that failed on this GPU, 'call: error'"""

    @property
    def compute_capability_str(self) -> str:
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"


@dataclass(frozen=True, kw_only=True)
class GpuLink:
    """How two GPUs talk, like one cell of `nvidia-smi topo -m`."""

    __pydantic_config__ = _PYDANTIC_CONFIG

    a: int
    b: int
    kind: str
    """NV<n> (n bonded NVLinks), PIX, PXB, PHB, NODE, SYS, or ? when unknown"""
    p2p_read: Optional[bool] = None
    """NVML P2P read status OK; None when unknown"""


@dataclass(frozen=True, kw_only=True)
class NvidiaFacts:
    __pydantic_config__ = _PYDANTIC_CONFIG

    driver_version: Optional[str] = None
    nvml_version: Optional[str] = None
    cuda_driver_version: Optional[str] = None
    """e.g. '13.0'"""
    gpus: tuple[GpuFacts, ...] = ()
    links: tuple[GpuLink, ...] = ()
    error: Optional[str] = None
    """why no GPU could be read, e.g. 'no NVIDIA driver (libnvidia-ml.so.1 not found)'"""


@dataclass(frozen=True, kw_only=True)
class DockerFacts:
    __pydantic_config__ = _PYDANTIC_CONFIG

    present: bool = False
    version: Optional[str] = None
    """engine (server) version; None when the engine does not answer"""
    error: Optional[str] = None
    nvidia_runtime: bool = False
    """the engine lists an 'nvidia' runtime"""
    nvidia_container_toolkit: bool = False
    """nvidia-container-runtime-hook or nvidia-ctk found on the host"""


@dataclass(frozen=True, kw_only=True)
class SystemFacts:
    __pydantic_config__ = _PYDANTIC_CONFIG

    hostname: str
    kernel: str
    os: str
    cpu_count: int
    ram_total_bytes: int
    ram_available_bytes: int
    python: str
    disk_path: str
    """the deployment root, or the nearest existing parent of it"""
    disk_free_bytes: int
    disk_total_bytes: int


@dataclass(frozen=True, kw_only=True)
class HostFacts:
    __pydantic_config__ = _PYDANTIC_CONFIG

    schema_version: str = SCHEMA_VERSION
    system: SystemFacts
    nvidia: NvidiaFacts
    docker: DockerFacts


@dataclass(frozen=True, kw_only=True)
class HostProbe:
    """One host's line in a probe report: facts, or why there are none."""

    __pydantic_config__ = _PYDANTIC_CONFIG

    host: str
    """the inventory name, or user@host[:port] as given"""
    status: str
    """ok, failed (the probe ran and found a problem) or unreachable"""
    msg: str = ""
    elapsed_s: float = 0.0
    facts: Optional[HostFacts] = None


@dataclass(frozen=True, kw_only=True)
class ProbeReport:
    __pydantic_config__ = _PYDANTIC_CONFIG

    schema_version: str = SCHEMA_VERSION
    hosts: tuple[HostProbe, ...]


def report_to_json(report: ProbeReport) -> dict[str, Any]:
    """The report as JSON data (`probe --json`): the fields in their order, tuples as lists."""
    return json_data(report)


class ReportFileError(ValueError):
    """A saved probe report that does not match the schema; the message names the first bad field."""


def report_from_json(data: Any) -> ProbeReport:
    """A report read back from JSON data (`plan --facts FILE`), checked against the schema by pydantic:
    what `probe --json` prints (the result document: each row's payload the host's facts) or a report
    as report_to_json writes it (`hosts`, as earlier versions printed)."""
    from pydantic import ValidationError

    if isinstance(data, dict) and data.get("command") == "probe" and isinstance(data.get("results"), list):
        data = {"schema_version": data.get("facts_schema", SCHEMA_VERSION),
                "hosts": [{"host": row.get("host"), "status": row.get("status"), "msg": row.get("msg", ""),
                           "elapsed_s": row.get("elapsed_s", 0.0), "facts": row.get("payload")}
                          if isinstance(row, dict) else row for row in data["results"]]}
    try:
        return _report_adapter().validate_python(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise ReportFileError(f"{where}: {first['msg']} ({exc.error_count()} problem(s))") from None


@cache
def _report_adapter():
    """pydantic's validator and serializer of ProbeReport, built once (~30 ms) on first use."""
    from pydantic import TypeAdapter

    return TypeAdapter(ProbeReport)


def report_json_schema() -> dict[str, Any]:
    """The JSON Schema of `report_to_json`'s output (pydantic's, in serialization mode)."""
    return _report_adapter().json_schema(mode="serialization")
