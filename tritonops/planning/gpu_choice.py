"""Which of a host's GPUs its Triton container serves on (issue #22, before replicas): the GPUs the deployment
may use (`tritonops_gpus`, default all), and among them the group the largest tensor-parallel engine needs,
chosen by the probe's topology: NVLink/NVSwitch pairs first, then the same PCIe switch, host bridge, NUMA
node (`placement.best_group`), the lowest indices on a tie, so the same inputs give the same GPUs and a no-op
deploy stays a no-op. A group that has to cross a slow link says so. Pure: no I/O; a bad value is an
InputError naming the variable and where it was set.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tritonops.errors import InputError
from tritonops.facts.model import HostFacts
from tritonops.planning.placement import SLOW, GpuTopology, PlacementError, best_group, usable_gpus

GPUS_VAR = "tritonops_gpus"


@dataclass(frozen=True)
class GpuChoice:
    gpus: tuple[int, ...]          # the container's devices (docker run --gpus device=...)
    link: str = ""                 # the slowest link inside the group ('' for one GPU)
    reasons: tuple[str, ...] = ()  # a slow link, GPUs left idle

    def describe(self) -> str:
        span = ",".join(map(str, self.gpus))
        return f"GPU {span}" + (f" ({self.link})" if self.link else "")


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


def choose_gpus(facts: HostFacts, size: int, allowed: tuple[int, ...] | None) -> GpuChoice:
    """The `size` GPUs the container gets, out of `allowed` (None: all)."""
    topology = GpuTopology.from_facts(facts.nvidia)
    usable, _ = usable_gpus(topology, allowed, {})
    group = best_group(topology, usable, size)
    if group is None:
        raise PlacementError(f"tensor parallel size {size} needs {size} GPUs; {GPUS_VAR} leaves "
                             f"{len(usable)} ({','.join(map(str, usable))})")
    link = topology.slowest(group)
    reasons = []
    if link in SLOW:
        reasons.append(f"GPU {','.join(map(str, group))} have no faster link than {link} ({SLOW[link]}): "
                       "tensor-parallel traffic is slow there")
    return GpuChoice(group, link, tuple(reasons))
