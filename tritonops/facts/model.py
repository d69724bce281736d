"""The facts a probe reports about one host, as a versioned, documented schema.

These types are the contract between the probe (which fills them), sizing
(which reads the GPUs) and the CLI (which renders them). `--json` output is
`ProbeReport`; its JSON Schema is `docs/probe-schema.json`, generated from
these classes (`python -m tritonops.facts.schema`).
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "tritonops.probe/1"


class _Fact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GpuProcess(_Fact):
    pid: int
    used_memory_bytes: Optional[int] = Field(None, description="None where NVML cannot tell")
    kind: str = Field("compute", description="compute or graphics")


class GpuFacts(_Fact):
    index: int
    name: str = Field(description="as NVML reports it, e.g. 'NVIDIA H200'")
    uuid: str
    pci_bus_id: str
    memory_total_bytes: int = Field(description="NVML total (nvmlDeviceGetMemoryInfo)")
    memory_free_bytes: int
    memory_used_bytes: int
    memory_reserved_bytes: Optional[int] = Field(
        None, description="NVML v2 'reserved' (driver/firmware); None where v2 is not available")
    cuda_total_bytes: int = Field(
        description="what CUDA (torch.cuda.mem_get_info) reports as total: NVML total minus reserved; "
                    "vLLM budgets from this")
    compute_capability: tuple[int, int]
    mig_enabled: Optional[bool] = None
    persistence_mode: Optional[bool] = None
    nvlink_active_links: int = 0
    processes: tuple[GpuProcess, ...] = ()
    errors: tuple[str, ...] = Field((), description="NVML calls that failed on this GPU, 'call: error'")

    @property
    def compute_capability_str(self) -> str:
        return f"{self.compute_capability[0]}.{self.compute_capability[1]}"


class GpuLink(_Fact):
    """How two GPUs talk, like one cell of `nvidia-smi topo -m`."""

    a: int
    b: int
    kind: str = Field(description="NV<n> (n bonded NVLinks), PIX, PXB, PHB, NODE, SYS, or ? when unknown")
    p2p_read: Optional[bool] = Field(None, description="NVML P2P read status OK; None when unknown")


class NvidiaFacts(_Fact):
    driver_version: Optional[str] = None
    nvml_version: Optional[str] = None
    cuda_driver_version: Optional[str] = Field(None, description="e.g. '13.0'")
    gpus: tuple[GpuFacts, ...] = ()
    links: tuple[GpuLink, ...] = ()
    error: Optional[str] = Field(
        None, description="why no GPU could be read, e.g. 'no NVIDIA driver (libnvidia-ml.so.1 not found)'")


class DockerFacts(_Fact):
    present: bool = False
    version: Optional[str] = Field(None, description="engine (server) version; None when the engine does not answer")
    error: Optional[str] = None
    nvidia_runtime: bool = Field(False, description="the engine lists an 'nvidia' runtime")
    nvidia_container_toolkit: bool = Field(
        False, description="nvidia-container-runtime-hook or nvidia-ctk found on the host")


class SystemFacts(_Fact):
    hostname: str
    kernel: str
    os: str
    cpu_count: int
    ram_total_bytes: int
    ram_available_bytes: int
    python: str
    disk_path: str = Field(description="the deployment root, or the nearest existing parent of it")
    disk_free_bytes: int
    disk_total_bytes: int


class HostFacts(_Fact):
    schema_version: str = SCHEMA_VERSION
    system: SystemFacts
    nvidia: NvidiaFacts
    docker: DockerFacts


class HostProbe(_Fact):
    """One host's line in a probe report: facts, or why there are none."""

    host: str = Field(description="the inventory name, or user@host[:port] as given")
    status: str = Field(description="ok, failed (the probe ran and found a problem) or unreachable")
    msg: str = ""
    elapsed_s: float = 0.0
    facts: Optional[HostFacts] = None


class ProbeReport(_Fact):
    schema_version: str = SCHEMA_VERSION
    hosts: tuple[HostProbe, ...]
