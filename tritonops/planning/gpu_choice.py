"""Which of a host's GPUs its Triton containers serve on (issue #22): the GPUs the deployment may use
(`tritonops_gpus`, default all), and among them one group per replica (`tritonops_replicas`: a number, default
1, or `auto` for as many as the GPUs hold) of the size the largest tensor-parallel engine needs, chosen by the
probe's topology: NVLink/NVSwitch first, then the same PCIe switch, host bridge, NUMA node
(`placement.place`), the lowest indices on a tie, so the same inputs give the same GPUs and a no-op deploy
stays a no-op. Each replica serves the host's whole model repository; its ports are the host's plus
`tritonops_port_stride` (default 10) times its index. A group that has to cross a slow link says so. Pure: no
I/O; a bad value is an InputError naming the variable and where it was set.
"""

from __future__ import annotations

from dataclasses import replace

from tritonops.errors import InputError
from tritonops.facts.model import HostFacts
from tritonops.planning.placement import (GpuTopology, ModelDemand, Placement, PlacementError, ReplicaPorts, Slot,
                                          place, usable_gpus, with_ports)

GPUS_VAR = "tritonops_gpus"
REPLICAS_VAR = "tritonops_replicas"
STRIDE_VAR = "tritonops_port_stride"
BOOT_FIRST_VAR = "tritonops_boot_first"
PORT_VARS = (("tritonops_http_port", 8000), ("tritonops_grpc_port", 8001), ("tritonops_metrics_port", 8002))
REPOSITORY = "triton"  # what a replica serves: the release's whole model repository


def replica_count(value, where: str | None) -> int | None:
    """`tritonops_replicas`: a whole number >= 1 (default 1), or `auto` (None: as many as the GPUs hold)."""
    if value is None or value == "":
        return 1
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit())):
        raise InputError(f"{REPLICAS_VAR} {value!r} is not a whole number >= 1 or 'auto'", where)
    if int(value) < 1:
        raise InputError(f"{REPLICAS_VAR} {value!r} is not a whole number >= 1 or 'auto'", where)
    return int(value)


def allowed_gpus(value, where: str | None) -> tuple[int, ...] | None:
    """`tritonops_gpus` as GPU indices: a list of whole numbers, or a string "0,1" / "2-5" / "0,2-3"; None
    (or unset) is every GPU."""
    if value is None or value == "" or value == []:
        return None
    bad = InputError(f"{GPUS_VAR} {value!r} is not a list of distinct GPU indices (e.g. [0, 1] or \"2-3\")", where)
    items = value if isinstance(value, list) else str(value).split(",") if isinstance(value, (str, int)) else None
    if items is None or isinstance(value, bool):
        raise bad
    found: list[int] = []
    for item in items:
        if isinstance(item, bool):
            raise bad
        if isinstance(item, int):
            found.append(item)
            continue
        text = str(item).strip()
        low, dash, high = text.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            raise bad
        first, last = int(low), int(high) if dash else int(low)
        if last < first:
            raise bad
        found.extend(range(first, last + 1))
    if any(g < 0 for g in found) or len(set(found)) != len(found):
        raise bad
    return tuple(sorted(found))


def restrict_facts(facts: HostFacts, allowed: tuple[int, ...] | None) -> HostFacts:
    """The host's facts with only the GPUs the deployment may use (sizing then counts and measures those).
    PlacementError when `allowed` names a GPU the host lacks."""
    if allowed is None or facts.nvidia is None:
        return facts
    topology = GpuTopology.from_facts(facts.nvidia)
    usable_gpus(topology, allowed, {})  # a GPU the host lacks: one line naming it
    keep = set(allowed)
    nvidia = replace(facts.nvidia, gpus=tuple(g for g in facts.nvidia.gpus if g.index in keep),
                     links=tuple(link for link in facts.nvidia.links if link.a in keep and link.b in keep))
    return replace(facts, nvidia=nvidia)


def place_replicas(facts: HostFacts, size: int, allowed: tuple[int, ...] | None, replicas: int | None,
                   base: ReplicaPorts, stride: int, boot_first: bool = True) -> Placement:
    """One GPU group of `size` per replica, out of `allowed` (None: all), with its ports, and with `boot_first`
    each replica's standby slot on the GPUs left over (`with_standby`). PlacementError for more replicas than the
    GPUs hold, or ports past 65535 / shared."""
    topology = GpuTopology.from_facts(facts.nvidia)
    try:
        placed = place(topology, [ModelDemand(REPOSITORY, size, replicas)], allowed)
    except PlacementError as err:
        raise PlacementError(str(err).replace(f"model {REPOSITORY}: ", "").replace(
            f"{REPOSITORY} {replicas} x TP", f"{REPLICAS_VAR} {replicas} x TP")) from None
    placed = replace(placed, reasons=tuple(r.replace(f"{REPOSITORY} replica ", "replica ", 1) for r in placed.reasons))
    if placed.idle and replicas is not None:  # the count asked for: the idle GPUs are shown, not a note
        idle = ",".join(map(str, placed.idle))
        placed = replace(placed, reasons=tuple(r for r in placed.reasons if not r.startswith(f"GPU {idle} serve nothing")))
    placed = with_ports(placed, base, stride)
    return with_standby(topology, placed, size, base, stride) if boot_first else placed


def with_standby(topology: GpuTopology, placed: Placement, size: int, base: ReplicaPorts, stride: int) -> Placement:
    """Kamal's order where the GPUs allow (issue #42): each replica's standby slot, where its next release boots
    and passes its gate while the one it replaces still serves. The GPUs no replica got, in groups of `size`
    chosen as replicas' are (the best-linked first); replica i gets group i, or shares one in turn when there are
    fewer groups than replicas (a rollout then boots first only those whose group is free). Its ports are those
    of the index past the last replica (replica i of n: the base + (n + i) x stride). No GPU left over, or ports
    past 65535: no standby slot, replicas stop before their new release starts."""
    if not placed.idle or not placed.replicas:
        return placed
    try:
        spare = place(topology, [ModelDemand(REPOSITORY, size, None)], placed.idle)
    except PlacementError:
        return placed  # not one group of `size` among the idle GPUs
    groups = [r.gpus for r in spare.replicas]
    count, standby = len(placed.replicas), []
    for ordinal, replica in enumerate(placed.replicas):
        ports = ReplicaPorts(*(port + stride * (count + ordinal) for port in base.all()))
        if max(ports.all()) > 65535:
            return placed
        standby.append(replace(replica, standby=Slot(groups[ordinal % len(groups)], ports)))
    used = sorted({gpu for replica in standby for gpu in replica.standby.gpus})
    note = (f"spare GPU {','.join(map(str, used))}: a replica's new release boots there and passes its gate "
            "before the old one stops (tritonops_boot_first)")
    return replace(placed, replicas=tuple(standby), reasons=(*placed.reasons, note))


def describe(replica) -> str:
    """`replica 1: GPU 2,3 (NV18), ports 8010/8011/8012`."""
    link = f" ({replica.link})" if replica.link else ""
    ports = "/".join(map(str, replica.ports.all())) if replica.ports else "-"
    return f"replica {replica.index}: GPU {','.join(map(str, replica.gpus))}{link}, ports {ports}"
