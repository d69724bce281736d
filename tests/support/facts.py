"""A host's facts as a probe would report them, made up for a test: one card model, any number of GPUs."""

from tritonops.facts.model import DockerFacts, GpuFacts, GpuProcess, HostFacts, NvidiaFacts, SystemFacts


def host_facts(gpus: int = 1, name="NVIDIA H200", total=150_754_820_096, cuda=150_109_880_320, cc=(9, 0),
               used_by_others=0, ram=2 * 2**40) -> HostFacts:
    procs = (GpuProcess(pid=1, used_memory_bytes=used_by_others),) if used_by_others else ()
    return HostFacts(
        system=SystemFacts(hostname="h", kernel="k", os="o", cpu_count=8, ram_total_bytes=ram,
                           ram_available_bytes=ram, python="3.11", disk_path="/", disk_free_bytes=1,
                           disk_total_bytes=1),
        nvidia=NvidiaFacts(gpus=tuple(
            GpuFacts(index=i, name=name, uuid=f"GPU-{i}", pci_bus_id=f"0:{i}", memory_total_bytes=total,
                     memory_free_bytes=cuda - used_by_others, memory_used_bytes=total - cuda + used_by_others,
                     memory_reserved_bytes=total - cuda, cuda_total_bytes=cuda, compute_capability=cc,
                     processes=procs)
            for i in range(gpus))),
        docker=DockerFacts())
