"""The unit above the host (issue #28): a Ray cluster of hosts that runs one model as a pipeline, one stage
per host, tensor parallel inside each. Pure: the members are chosen and checked from the hosts' GPU specs,
before anything is touched; a group that cannot form the cluster is one line saying which host differs.

The head is the first member (the inventory's order): it runs Ray's head and Triton; the workers run Ray
nodes that join it. Every member's release.json carries the same `Cluster` (`to_release()`), so status,
rollback and a later deploy read the cluster from any member.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tritonops.errors import TritonopsError
from tritonops.sizing.gpu_spec import GpuSpec
from tritonops.sizing.pipeline import layer_split

class ClusterError(TritonopsError):
    """Hosts that cannot form the cluster: one line naming the host and what differs."""


@dataclass(frozen=True)
class ClusterHost:
    """A host that may join: its inventory name, the address other members reach it at (Ray's node IP,
    VLLM_HOST_IP), its GPUs as probed, and the network interface for NCCL/Gloo (None: their choice)."""

    name: str
    address: str
    gpus: GpuSpec
    interface: str | None = None


@dataclass(frozen=True)
class ClusterMember:
    host: str
    address: str
    stage: int                 # pipeline rank: 0 is the head's
    first_layer: int
    layers: int
    interface: str | None = None


@dataclass(frozen=True)
class Cluster:
    name: str                  # the deployment's: one cluster per deployment and model
    tensor_parallel_size: int  # GPUs per member
    pipeline_parallel_size: int
    members: tuple[ClusterMember, ...]

    @property
    def head(self) -> ClusterMember:
        return self.members[0]

    @property
    def workers(self) -> tuple[ClusterMember, ...]:
        return self.members[1:]

    def member(self, host: str) -> ClusterMember | None:
        return next((m for m in self.members if m.host == host), None)

    def to_release(self) -> dict:
        """The `cluster` entry of each member's release.json."""
        return {"name": self.name, "head": self.head.host, "workers": [m.host for m in self.workers],
                "tensor_parallel_size": self.tensor_parallel_size,
                "pipeline_parallel_size": self.pipeline_parallel_size,
                "members": [{"host": m.host, "address": m.address, "stage": m.stage,
                             "layers": [m.first_layer, m.first_layer + m.layers - 1], "interface": m.interface}
                            for m in self.members]}

    @classmethod
    def from_release(cls, data: dict) -> Cluster:
        members = tuple(ClusterMember(m["host"], m["address"], m["stage"], m["layers"][0],
                                      m["layers"][1] - m["layers"][0] + 1, m.get("interface"))
                        for m in data["members"])
        return cls(data["name"], data["tensor_parallel_size"], data["pipeline_parallel_size"], members)


def check_members(name: str, hosts: Sequence[ClusterHost], pipeline_parallel_size: int) -> Sequence[ClusterHost]:
    """The first `pipeline_parallel_size` hosts, checked: enough of them, the same GPU model and count on
    every member (vLLM gives every stage the same engine arguments), distinct addresses."""
    pp = pipeline_parallel_size
    if pp < 2:
        raise ClusterError(f"cluster {name}: a pipeline across hosts needs at least 2 hosts, not {pp}")
    if len(hosts) < pp:
        raise ClusterError(f"cluster {name}: pipeline_parallel_size {pp} needs {pp} hosts; the group has "
                           f"{len(hosts)} ({', '.join(h.name for h in hosts)})")
    chosen = hosts[:pp]
    head = chosen[0]
    for host in chosen[1:]:
        if (host.gpus.name, host.gpus.count) != (head.gpus.name, head.gpus.count):
            raise ClusterError(f"cluster {name}: {host.name} has {host.gpus.count} x {host.gpus.name}, the head "
                               f"{head.name} {head.gpus.count} x {head.gpus.name}: every member needs the same "
                               "GPUs (one engine configuration for every stage)")
    seen: dict[str, str] = {}
    for host in chosen:
        if host.address in seen:
            raise ClusterError(f"cluster {name}: {host.name} and {seen[host.address]} have the same address "
                               f"{host.address}")
        seen[host.address] = host.name
    return chosen


def form_cluster(name: str, hosts: Sequence[ClusterHost], tensor_parallel_size: int, num_hidden_layers: int,
                 pipeline_parallel_size: int | None = None) -> Cluster:
    """The first `pipeline_parallel_size` hosts (all of them when None), checked (check_members), TP within
    each host, a stage for every member."""
    pp = len(hosts) if pipeline_parallel_size is None else pipeline_parallel_size
    chosen = check_members(name, hosts, pp)
    if tensor_parallel_size > chosen[0].gpus.count:
        raise ClusterError(f"cluster {name}: tensor_parallel_size {tensor_parallel_size} needs more GPUs than "
                           f"each member's {chosen[0].gpus.count}")
    members, start = [], 0
    for stage, (host, layers) in enumerate(zip(chosen, layer_split(num_hidden_layers, pp), strict=True)):
        members.append(ClusterMember(host.name, host.address, stage, start, layers, host.interface))
        start += layers
    return Cluster(name, tensor_parallel_size, pp, tuple(members))
