"""The rollout of a release over a host's replicas, planned from what the host has (issue #42 item 3). Pure.

In: the release's serve record, the release id, and the host's facts: each container of the deployment by name (the
replicas', the parked ones `<replica>--<release>`, the ones kept aside `<replica>--<release>-failed`), the release
`current` names, the releases with a passed gate on record, the GPUs and ports another process holds, and the record
of the release now serving (where its replicas run). Out: per replica, in rollout order, either a refusal or its
steps, what brings its previous container back when its own gate fails (`on_failure`), and what undoes it when a
later replica fails (`undo`); the surplus replicas' containers to stop after the last; whether `current` switches.

The order per replica (Kamal's where the GPUs allow):
- **unchanged**: its container already runs the release as asked: gated again (a gate on record when it has none);
- **boot-first**: the new replica's GPUs and ports are free (a spare GPU, or a replica moving to other GPUs and
  ports): it boots beside the old one as `<replica>--<release>`, is gated and set ready on the door, then the old
  one is drained, stopped and parked, and the new one takes the replica's name. No moment with a replica fewer;
- **stop-first** otherwise: drained, stopped and parked, the new one started under its name and gated; when its
  gate fails it is kept aside (`-failed`) and the parked one started again and gated.

A run cut off between parking and starting leaves no container under the replica's name and the previous one parked:
the previous release is the one `current` names, and it comes back if the new one fails (a case of this
planner). operations/serve_rollout.py carries the plan out. Refusals come before any container stops: a GPU another process holds, a
port another process binds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from tritonops.planning.serve_record import ReplicaRecord, ReplicaSlot, ServeRecord
from tritonops.serving import container_commands as commands
from tritonops.values.containers import replica_container

STOP_GRACE_S = 30       # a replica stopped for a new release: its requests have been drained first
FAILED_GRACE_S = 10     # a new container that failed its gate
Action = Literal["run", "gate", "record_gate", "ready", "drain", "stop", "rename", "remove", "start"]
Order = Literal["unchanged", "boot-first", "stop-first", "refused"]


@dataclass(frozen=True)
class ContainerFact:
    """One container as `docker inspect` tells it."""
    release: str | None      # its tritonops.release label
    running: bool
    as_asked: bool = True    # its image and log settings are the ones the release asks for
    ports: tuple[int, ...] = ()  # the host ports it publishes (none known: read from the serving release's record)


@dataclass(frozen=True)
class HostFacts:
    containers: Mapping[str, ContainerFact]     # the deployment's containers by name
    current: str | None = None                  # the release `current` names
    passed: frozenset[str] = frozenset()        # releases with a passed gate in their release.json
    held_gpus: frozenset[int] = frozenset()     # GPUs a process outside the deployment's containers holds
    holders: Mapping[int, str] = field(default_factory=dict)  # a held GPU -> who holds it ("pid 4242 (0.2 GiB)")
    held_ports: frozenset[int] = frozenset()    # host ports a process outside the deployment's containers binds
    serving: ServeRecord | None = None          # the record of the release `current` names (where its replicas run)


@dataclass(frozen=True)
class Step:
    action: Action
    container: str           # the container it acts on (ready, drain: the replica whose door server it is)
    to: str | None = None    # rename: the new name
    release: str | None = None  # run, gate, record_gate: the release it starts or gates; stop: a new container
    # that failed its gate (a shorter grace: it serves nothing). remove: whatever has the name, if anything does
    ports: tuple[int, ...] | None = None  # ready: the replica's servers re-pointed at these ports first (a
    # container booted on the replica's other slot, or its previous one back there); gate: asked there

    def said(self) -> str:
        """The step in one line, as the JSON cases write it."""
        at = "at " + "/".join(map(str, self.ports)) if self.ports else None
        return " ".join(part for part in (self.action, self.container, self.to, self.release, at) if part)

    def argv(self) -> tuple[str, ...] | None:
        """The docker command of a container action (serving.container_commands); None for the others (run: the
        replica's own `docker run`, gate and record_gate: host programs, ready and drain: the door's)."""
        if self.action == "stop":
            return commands.stop(self.container, STOP_GRACE_S if self.release is None else FAILED_GRACE_S)
        if self.action == "rename":
            assert self.to is not None
            return commands.rename(self.container, self.to)
        if self.action == "remove":
            return commands.remove(self.container, force=True)
        if self.action == "start":
            return commands.start(self.container)
        return None


@dataclass(frozen=True)
class ReplicaPlan:
    index: int
    order: Order
    steps: tuple[Step, ...] = ()
    on_failure: tuple[Step, ...] = ()  # its own gate failed: the new container kept aside, the previous one back
    undo: tuple[Step, ...] = ()        # a later replica failed: this one's previous container back
    previous: str | None = None        # the release it served before (parked as <replica>--<previous>)
    refusal: str | None = None
    why_no_way_back: str | None = None  # when its gate fails nothing comes back: why
    record: ReplicaRecord | None = None  # where it runs once its steps are done (on its standby slot: swapped)


@dataclass(frozen=True)
class RolloutPlan:
    release: str
    replicas: tuple[ReplicaPlan, ...]
    surplus: tuple[Step, ...] = ()     # after the last replica: the containers of replicas the release no longer has
    switch_current: bool = False       # `current` names the release once every replica passed
    refusals: tuple[str, ...] = field(default=())
    serve: ServeRecord | None = None   # the release's record as the rollout leaves it: each replica where it runs

    @property
    def refused(self) -> bool:
        return bool(self.refusals)


def plan_rollout(deployment: str, release: str, record: ServeRecord, facts: HostFacts) -> RolloutPlan:
    """Each replica of `record`, in order, from the host's `facts`. When any replica is refused, no replica has
    steps: nothing stops (a refusal comes before any container changes)."""
    occupied = _occupied(deployment, facts)
    plans = []
    for replica in record.replicas:
        plans.append(_replica(deployment, release, replica, facts, occupied))
        if plans[-1].order == "boot-first" or plans[-1].order == "stop-first":
            old = _placed(facts, replica.index, replica_container(deployment, replica.index))
            occupied = _moved(occupied, old, plans[-1].record or replica)
    for plan in plans:
        if plan.record is not None:
            record = record.with_replica(plan.record)
    refusals = tuple(f"replica {p.index}: {p.refusal}" for p in plans if p.refusal)
    if refusals:
        return RolloutPlan(release, tuple(ReplicaPlan(p.index, "refused", refusal=p.refusal) if p.refusal
                                          else ReplicaPlan(p.index, p.order) for p in plans), refusals=refusals)
    names = {replica_container(deployment, r.index) for r in record.replicas}
    surplus = tuple(step for name in sorted(facts.containers) if _is_replica(deployment, name) and name not in names
                    for step in ((Step("drain", name), Step("stop", name)) if facts.containers[name].running else ())
                    + (Step("remove", name),))
    return RolloutPlan(release, tuple(plans), surplus, switch_current=facts.current != release, serve=record)


def _replica(deployment: str, release: str, replica: ReplicaRecord, facts: HostFacts,
             occupied: tuple[frozenset[int], frozenset[int]]) -> ReplicaPlan:
    name = replica_container(deployment, replica.index)
    found = facts.containers.get(name)
    if found is not None and found.running and found.as_asked and found.release == release:
        steps = (Step("gate", name, release=release),)
        if release not in facts.passed:  # found running with no passed gate on record (its run was cut off)
            steps += (Step("record_gate", name, release=release),)
        return ReplicaPlan(replica.index, "unchanged", steps, record=_running_slot(facts, replica, name))
    refusal = _refusal(replica, facts)
    if refusal:
        return ReplicaPlan(replica.index, "refused", refusal=refusal)
    previous = found.release if found is not None else None
    if found is None and facts.current not in (None, release) and f"{name}--{facts.current}" in facts.containers:
        previous = facts.current  # a run cut off after parking the previous container and before starting its own
    parked = f"{name}--{previous}" if previous else None
    aside, failed = f"{name}--{release}", f"{name}--{release}-failed"
    gpus, ports = occupied

    def free(slot: ReplicaRecord | ReplicaSlot) -> bool:
        return not (set(slot.gpus) & gpus) and not (set(slot.ports) & ports)

    booted = replica if free(replica) else replica.swapped() if replica.standby and free(replica.standby) else None
    if found is not None and found.running and booted is not None and previous != release:
        # the new one answers before the old one leaves: the door's server is re-pointed at it (requests in
        # flight on the old one finish as it stops: Triton waits for them, up to its exit timeout)
        was = _placed(facts, replica.index, name)
        steps = (*_cleared(aside, facts), Step("run", aside, release=release), Step("gate", aside, release=release),
                 Step("ready", aside, ports=booted.ports), Step("stop", name), *_cleared(parked, facts),
                 Step("rename", name, parked), Step("rename", aside, name))
        on_failure = (*_cleared(failed, facts), Step("stop", aside, release=release),
                      Step("rename", aside, failed))  # the old one never stopped: it serves on
        return ReplicaPlan(replica.index, "boot-first", steps, on_failure,
                           _undo(name, parked, aside, previous, was.ports if was is not None else None), previous,
                           record=booted)
    # a run cut off after booting the release beside the old one may have left the door's server sent to it: the
    # server is sent back to the replica's own container once that passes, then that stray one goes
    stray = aside if previous != release and aside in facts.containers and facts.containers[aside].running else None
    was = _placed(facts, replica.index, name) if stray else None
    steps = ((Step("drain", name), Step("stop", name)) if found is not None and found.running else ())
    if found is not None:
        steps += (*_cleared(parked, facts), Step("rename", name, parked)) if parked else (Step("remove", name),)
    steps += (Step("run", name, release=release), Step("gate", name, release=release),
              Step("ready", name, ports=replica.ports if stray else None), *((Step("remove", stray),) if stray else ()))
    keep_aside = (*_cleared(failed, facts), Step("stop", name, release=release), Step("rename", name, failed))
    if parked is None:
        return ReplicaPlan(replica.index, "stop-first", steps, keep_aside, (), previous,
                           why_no_way_back="it had no previous release")
    back = (Step("rename", parked, name), Step("start", name), Step("gate", name, release=previous),
            Step("ready", name, ports=(was.ports if was is not None else replica.ports) if stray else None))
    # the same release with other log settings: a later replica's failure leaves this one as it is (same release)
    undo = _undo(name, parked, aside, previous) if previous != release else ()
    return ReplicaPlan(replica.index, "stop-first", steps, keep_aside + back, undo, previous, record=replica)


def _undo(name: str, parked: str | None, aside: str, previous: str | None,
          back_at: tuple[int, ...] | None = None) -> tuple[Step, ...]:
    """A replica that switched while a later one failed: its new container kept aside as <replica>--<release>, its
    parked previous one serving again, gated (`back_at`: on other ports than the new one, where the door's server
    is re-pointed)."""
    if parked is None:
        return ()
    return (Step("drain", name), Step("stop", name), Step("remove", aside), Step("rename", name, aside),
            Step("rename", parked, name), Step("start", name), Step("gate", name, release=previous, ports=back_at),
            Step("ready", name, ports=back_at))


def _running_slot(facts: HostFacts, replica: ReplicaRecord, name: str) -> ReplicaRecord:
    """Where a replica found running the release runs: on its standby slot when its container publishes that
    slot's ports (or, with no ports known, when the serving release's record says it runs there), else where the
    plan puts it."""
    standby, found = replica.standby, facts.containers.get(name)
    if standby is None:
        return replica
    if found is not None and found.ports:
        return replica.swapped() if set(standby.ports) <= set(found.ports) else replica
    placed = _placed(facts, replica.index, name)
    return replica.swapped() if placed is not None and (placed.gpus, placed.ports) == (standby.gpus, standby.ports) \
        else replica


def _cleared(name: str | None, facts: HostFacts) -> tuple[Step, ...]:
    """A name to be taken: whatever container has it now goes first."""
    return (Step("remove", name),) if name is not None and name in facts.containers else ()


def _refusal(replica: ReplicaRecord, facts: HostFacts) -> str | None:
    held = sorted(set(replica.gpus) & facts.held_gpus)
    if held:
        return "GPU busy: " + ", ".join(f"GPU {gpu} is held by {facts.holders.get(gpu, 'another process')}"
                                        for gpu in held)
    bound = sorted(set(replica.ports) & facts.held_ports)  # its own container's ports are not among them
    if bound:
        return "port in use: " + ", ".join(f"{port} is bound by another process" for port in bound)
    return None


def _placed(facts: HostFacts, index: int, name: str) -> ReplicaRecord | None:
    """Where the replica's running container runs: its place in the serving release's record."""
    found = facts.containers.get(name)
    if found is None or not found.running or facts.serving is None or found.release != facts.current:
        return None
    return next((r for r in facts.serving.replicas if r.index == index), None)


def _occupied(deployment: str, facts: HostFacts) -> tuple[frozenset[int], frozenset[int]]:
    """GPUs and ports taken before the rollout: another process's, and each running replica's (where the serving
    release placed it; a running container of another release: every GPU and port, not known free)."""
    gpus, ports = set(facts.held_gpus), set(facts.held_ports)
    for name, found in facts.containers.items():
        if not found.running:
            continue
        index = replica_index(deployment, name)
        placed = _placed(facts, index, name) if index is not None else None
        if placed is None:
            return frozenset(range(1024)), frozenset(range(1, 65536))  # not known: nothing counts as free
        gpus |= set(placed.gpus)
        ports |= set(placed.ports)
    return frozenset(gpus), frozenset(ports)


def _moved(occupied: tuple[frozenset[int], frozenset[int]], old: ReplicaRecord | None,
           new: ReplicaRecord) -> tuple[frozenset[int], frozenset[int]]:
    gpus, ports = occupied
    if old is not None:
        gpus, ports = gpus - set(old.gpus), ports - set(old.ports)
    return gpus | set(new.gpus), ports | set(new.ports)


def replica_index(deployment: str, name: str) -> int | None:
    """The index of the replica whose container is `name` (None: not a replica's name: parked, aside, another)."""
    base = replica_container(deployment, 0)
    if name == base:
        return 0
    tail = name.removeprefix(base + "-")
    return int(tail) if tail != name and tail.isdigit() and str(int(tail)) == tail else None


def _is_replica(deployment: str, name: str) -> bool:
    return replica_index(deployment, name) is not None
