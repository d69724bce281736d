"""Which GPUs each replica of each model gets on one host (issue #22): placement as data, decided before
anything is touched and the same for the same inputs, so a no-op deploy stays a no-op.

Inputs: the host's GPUs and how each pair talks (the probe's `nvidia-smi topo -m` cells), the models with
their tensor-parallel size and replica count (a number, or None for as many as fit), the GPUs the deployment
may use (`tritonops_gpus`), and the GPUs something else holds (left out, and said so). A replica with TP > 1
gets GPUs that share NVLink/NVSwitch where it can, else the same PCIe switch, host bridge or NUMA node; a
group that has to cross a slow link is said so in the reasons. Pure: no I/O; bad input is a PlacementError
with one line naming the model, GPU or count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations

from tritonops.errors import TritonopsError
from tritonops.facts.model import NvidiaFacts
from tritonops.values.containers import replica_name

# nvidia-smi topo -m, fastest first; NV<n> ranks by its bonded link count (more is faster).
PCIE_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")
SLOW = {"PHB": "through the CPU's PCIe host bridge", "NODE": "between PCIe host bridges of one NUMA node",
        "SYS": "between NUMA nodes (the CPUs' interconnect)", "?": "over a link the probe could not read"}
_NV = re.compile(r"^NV(\d+)$")


class PlacementError(TritonopsError):
    """Replicas that cannot be placed as asked: one line naming what is wrong."""


def link_rank(kind: str) -> tuple[int, int]:
    """Smaller is faster: NVLink (more bonded links first), then the PCIe paths, then unknown."""
    found = _NV.match(kind)
    if found:
        return (0, -int(found.group(1)))
    if kind in PCIE_ORDER:
        return (1 + PCIE_ORDER.index(kind), 0)
    return (len(PCIE_ORDER) + 1, 0)


@dataclass(frozen=True)
class GpuTopology:
    """A host's GPU indices and the link kind of each pair (missing pairs read as unknown, '?')."""

    gpus: tuple[int, ...]
    links: Mapping[frozenset, str]

    @classmethod
    def from_facts(cls, nvidia: NvidiaFacts) -> GpuTopology:
        return cls(tuple(sorted(g.index for g in nvidia.gpus)),
                   {frozenset((link.a, link.b)): link.kind for link in nvidia.links})

    @classmethod
    def uniform(cls, count: int, kind: str) -> GpuTopology:
        """Every pair the same link (an NVSwitch board; the lab's simulated hosts)."""
        return cls(tuple(range(count)), {frozenset(p): kind for p in combinations(range(count), 2)})

    def link(self, a: int, b: int) -> str:
        return self.links.get(frozenset((a, b)), "?")

    def slowest(self, group: Iterable[int]) -> str:
        """The slowest link inside a group ('' for one GPU)."""
        pairs = [self.link(a, b) for a, b in combinations(sorted(group), 2)]
        return max(pairs, key=link_rank) if pairs else ""


@dataclass(frozen=True)
class ModelDemand:
    model: str
    tensor_parallel: int
    replicas: int | None = None     # None: as many as the usable GPUs hold


@dataclass(frozen=True)
class ReplicaPorts:
    http: int
    grpc: int
    metrics: int

    def all(self) -> tuple[int, int, int]:
        return (self.http, self.grpc, self.metrics)


@dataclass(frozen=True)
class Slot:
    """Spare GPUs and ports where a replica's new release boots while its old one serves (gpu_choice.with_standby)."""
    gpus: tuple[int, ...]
    ports: ReplicaPorts


@dataclass(frozen=True)
class Replica:
    model: str
    index: int                      # per model, from 0
    gpus: tuple[int, ...]
    link: str = ""                  # the slowest link inside its TP group ('' at TP 1)
    ports: ReplicaPorts | None = None  # given by with_ports
    standby: Slot | None = None     # given by gpu_choice.with_standby

    @property
    def name(self) -> str:
        return replica_name(self.model, self.index)


@dataclass(frozen=True)
class Placement:
    replicas: tuple[Replica, ...]
    left_out: tuple[tuple[int, str], ...] = ()   # (GPU, why) for GPUs allowed but not usable
    idle: tuple[int, ...] = ()                   # usable GPUs no replica got
    reasons: tuple[str, ...] = ()

    def of(self, model: str) -> tuple[Replica, ...]:
        return tuple(r for r in self.replicas if r.model == model)


def best_group(topology: GpuTopology, free: Iterable[int], size: int) -> tuple[int, ...] | None:
    """The `size` free GPUs whose slowest link is fastest (then whose links are fastest overall, then the
    lowest indices): deterministic."""
    free = sorted(free)
    if size > len(free):
        return None
    if size == 1:
        return (free[0],)

    def key(group):
        ranks = sorted((link_rank(topology.link(a, b)) for a, b in combinations(group, 2)), reverse=True)
        return (ranks, group)

    return min(combinations(free, size), key=key)


def usable_gpus(topology: GpuTopology, allowed: Iterable[int] | None,
                busy: Mapping[int, str]) -> tuple[tuple[int, ...], tuple[tuple[int, str], ...]]:
    """The GPUs replicas may take, and those left out with why. A GPU `allowed` names that the host lacks is
    an error; every GPU busy is an error."""
    if allowed is None:
        wanted = topology.gpus
    else:
        wanted = tuple(sorted(set(allowed)))
        missing = [g for g in wanted if g not in topology.gpus]
        if missing:
            raise PlacementError(f"tritonops_gpus names GPU {', '.join(map(str, missing))}, which the host does not "
                                 f"have (it has {_span(topology.gpus) or 'none'})")
    left_out = tuple((g, busy[g]) for g in wanted if g in busy)
    usable = tuple(g for g in wanted if g not in busy)
    if not usable:
        held = "; ".join(f"GPU {g}: {why}" for g, why in left_out)
        raise PlacementError(f"every GPU this deployment may use is busy ({held or 'the host has no GPU'})")
    return usable, left_out


def place(topology: GpuTopology, demands: Iterable[ModelDemand], allowed: Iterable[int] | None = None,
          busy: Mapping[int, str] | None = None) -> Placement:
    """Replicas with a number first (in the order given), then the as-many-as-fit ones, one replica each in
    turn until none fits. PlacementError when a model cannot get what it asks."""
    demands = tuple(demands)
    usable, left_out = usable_gpus(topology, allowed, busy or {})
    for d in demands:
        if d.tensor_parallel < 1:
            raise PlacementError(f"model {d.model}: tensor parallel size {d.tensor_parallel} is not a whole number >= 1")
        if d.replicas is not None and d.replicas < 1:
            raise PlacementError(f"model {d.model}: tritonops_replicas {d.replicas} is not a whole number >= 1")
    fixed = [d for d in demands if d.replicas is not None]
    needed = sum(d.replicas * d.tensor_parallel for d in fixed)
    if needed > len(usable):
        asked = ", ".join(f"{d.model} {d.replicas} x TP {d.tensor_parallel}" for d in fixed)
        raise PlacementError(f"{asked} need {needed} GPUs; {len(usable)} usable ({_span(usable)})"
                             + _left_out_text(left_out))
    auto = [d for d in demands if d.replicas is None]
    if allowed is not None and len(auto) == 1 and not fixed and len(usable) % auto[0].tensor_parallel:
        d = auto[0]
        raise PlacementError(f"model {d.model}: tensor parallel size {d.tensor_parallel} does not divide the "
                             f"{len(usable)} GPUs given ({_span(usable)})")
    free, replicas, reasons = set(usable), [], []
    counts: dict[str, int] = {}

    def take(d: ModelDemand) -> bool:
        group = best_group(topology, free, d.tensor_parallel)
        if group is None:
            return False
        free.difference_update(group)
        replica = Replica(d.model, counts.get(d.model, 0), group, topology.slowest(group))
        counts[d.model] = replica.index + 1
        replicas.append(replica)
        if replica.link in SLOW:
            reasons.append(f"{d.model} replica {replica.index}: GPUs {_span(group)} have no faster link than "
                           f"{replica.link} ({SLOW[replica.link]}): tensor-parallel traffic is slow there")
        return True

    for d in fixed:
        for _ in range(d.replicas):
            if not take(d):  # enough GPUs in number, never short: kept as a guard
                raise PlacementError(f"model {d.model}: no {d.tensor_parallel} free GPUs left for replica "
                                     f"{counts.get(d.model, 0)}")
    progress = True
    while progress:
        progress = False
        for d in auto:
            progress = take(d) or progress
    for d in auto:
        if not counts.get(d.model):
            raise PlacementError(f"model {d.model}: no {d.tensor_parallel} free GPUs left (usable: {_span(usable)}"
                                 f"{', the rest taken by the other models' if fixed or len(auto) > 1 else ''})")
    for g, why in left_out:
        reasons.append(f"GPU {g} left out: {why}")
    idle = tuple(sorted(free))
    if idle:
        reasons.append(f"GPU {_span(idle)} serve nothing: no replica fits there")
    ordered = tuple(sorted(replicas, key=lambda r: (r.gpus[0], r.model, r.index)))
    return Placement(ordered, left_out, idle, tuple(reasons))


def _span(gpus: Iterable[int]) -> str:
    return ",".join(str(g) for g in sorted(gpus))


def _left_out_text(left_out) -> str:
    return "; left out: " + ", ".join(f"GPU {g} ({why})" for g, why in left_out) if left_out else ""


def with_ports(placement: Placement, base: ReplicaPorts, stride: int, taken: Iterable[int] = ()) -> Placement:
    """Each replica's ports: the base ones plus `stride` times its place in the placement's order. One line
    naming the replicas when two would share a port, a port would pass 65535, or one is `taken` on the host
    already (by something that is not this deployment)."""
    if stride < 1:
        raise PlacementError(f"tritonops_port_stride {stride} is not a whole number >= 1")
    taken, owner, placed = set(taken), {}, []
    for ordinal, replica in enumerate(placement.replicas):
        ports = ReplicaPorts(*(port + stride * ordinal for port in base.all()))
        for port in ports.all():
            if not 1 <= port <= 65535:
                raise PlacementError(f"replica {replica.name}: port {port} (base {base.all()} + {stride} x "
                                     f"{ordinal}) is outside 1-65535")
            if port in owner:
                raise PlacementError(f"replicas {owner[port]} and {replica.name} would both use port {port}: "
                                     f"make tritonops_port_stride at least 3 (it is {stride})")
            if port in taken:
                raise PlacementError(f"replica {replica.name}: port {port} is in use on the host")
            owner[port] = replica.name
        placed.append(Replica(replica.model, replica.index, replica.gpus, replica.link, ports))
    return Placement(tuple(placed), placement.left_out, placement.idle, placement.reasons)

