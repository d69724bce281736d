"""`tritonops stop` / `tritonops start` (issue #26): the current release's replicas of each host stopped for
maintenance, and started again, one replica at a time, each host under its deployment lock.

Stop: behind balancers, each replica is drained on every balancer first (deploy.door_rollout: no new request goes
to it, the ones in flight finish), then its container stops (`docker stop`, Triton's own graceful exit); the
balancers keep it drained. Start: the container starts again (`docker start`: the same release, image and
arguments), the replica must answer its serving mode's readiness and every model's (the release's deadline), then
the balancers send to it again. A replica already in the asked state is left alone (ok); a host with no current
release, or no container to start (`deploy` makes one), fails alone. Nothing else changes: no release, no file.
`--check` says what would be done. Each host's outcome goes to the audit log like a deploy's.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass

from tritonops.deploy.door_rollout import door_rollout
from tritonops.deploy.event_log import audit_results
from tritonops.deploy.run import LockedRunOptions, locked
from tritonops.errors import InputError, TritonopsError
from tritonops.facts.query_program import read_facts
from tritonops.modes.choice import host_ports
from tritonops.planning.bind import replica_bind, serving_address
from tritonops.planning.deployment import deployment_of
from tritonops.playbook.inputs import RunInputs
from tritonops.results import GroupResult, HostResult
from tritonops.serving import container_commands as commands
from tritonops.serving.releases import read_deployed
from tritonops.serving.status import container_states_query, health_query, parse_container_states, parse_health
from tritonops.transport.sessions import HostSession, SessionPool

ACTIONS = ("stop", "start")
STOP_TIMEOUT_S = 60         # docker stop's grace before it kills Triton
DEFAULT_READY_S = 900.0     # a release that recorded no gate deadline
POLL_S = 1.0


@dataclass(frozen=True)
class MaintenanceOptions(LockedRunOptions):
    action: str                       # stop | start
    replica: int | None = None        # one replica of each host; None: every replica

    @property
    def command(self) -> str:
        return self.action


@dataclass(frozen=True)
class ReplicaChange:
    index: int
    container: str
    before: str                       # the container's state before: running, exited, created, absent...
    after: str                        # ... and after (what it would be in --check)


@dataclass(frozen=True)
class Maintained:
    """A host's payload: the release whose replicas were stopped or started, and each replica's change."""
    release: str
    replicas: tuple[ReplicaChange, ...]


def maintain(inputs: RunInputs, options: MaintenanceOptions, clock=time.time) -> GroupResult:
    """One result per serving host --limit selected (task = the action), then the lock phases' refusals."""
    if options.action not in ACTIONS:
        raise InputError(f"not an action: {options.action!r} (one of {', '.join(ACTIONS)})")
    if options.replica is not None and options.replica < 0:
        raise InputError(f"a replica index is 0 or more, not {options.replica}", "--replica")
    hosts = list(inputs.hosts)
    if not hosts:
        raise InputError(f"no serving host matches {inputs.limit or 'the inventory'}", "--limit" if inputs.limit else "-i")
    by_name = {host.name: host for host in hosts}
    deployments = {host.name: deployment_of(host) for host in hosts}
    # where each host's replicas answer on the host (checked before any host is contacted)
    binds = {host.name: replica_bind(host, inputs.behind_balancer) for host in hosts}  # for releases without serve.bind
    balancers = list(inputs.doors)  # every balancer, whatever --limit selects: each drains what stops
    started = clock()
    refused: list[HostResult] = []
    doors = None
    with SessionPool([host.connection for host in hosts + balancers], forks=options.forks,
                     accept_new_host_keys=options.accept_new_host_keys) as pool:
        with locked(pool, list(by_name), deployments, options, refused.append) as held:
            doors = door_rollout(pool, held, balancers, deployments, options)

            def phase(session: HostSession) -> HostResult:
                return _on_host(session, by_name[session.name], deployments[session.name], binds[session.name],
                                options, doors)

            done = pool.run(phase, held, task=options.action)
    unreached = [HostResult(balancer, "unreachable", f"could not be reached to drain the replicas it fronts: {why}",
                            task=options.action) for balancer, why in (doors.unreachable.items() if doors else ())]
    results = GroupResult.of(sorted([*done, *(r for r in refused if r.failed)],
                                    key=lambda r: list(by_name).index(r.host)) + unreached)
    if options.audit_log is not None and not options.check:
        audit_results(options.audit_log, results, deployments, command=options.action, started=started,
                      finished=clock())
    return results


def _on_host(session: HostSession, host, deployment: tuple[str, str], bind: str, options: MaintenanceOptions,
             doors) -> HostResult:
    root, name = deployment
    release = read_deployed(session.transport, root, name, host_ports(host.vars)).current_release
    if release is None:
        return HostResult(session.name, "failed", f"{name}: no current release here: nothing to {options.action}")
    if release.serve is None:
        return HostResult(session.name, "failed", f"release {release.id} does not say how to start it (made by an "
                                                  f"older tritonops?): nothing to {options.action}")
    serve, mode = release.serve, release.mode
    address = serving_address(release.bind, bind)  # where the replicas answer on the host
    placement = serve.replicas
    indices = [r.index for r in placement]
    if options.replica is not None:
        if options.replica not in indices:
            return HostResult(session.name, "failed", f"release {release.id} places no replica {options.replica} "
                                                      f"(its replicas: {', '.join(map(str, indices))})")
        placement = tuple(r for r in placement if r.index == options.replica)
    names = tuple(r.container(name) for r in placement)
    states_query = container_states_query(names)
    states = parse_container_states(read_facts(session.transport, [states_query]).command(states_query.argv).stdout)
    models, deadline_s = serve.models, serve.deadline_s
    changes, said = [], []
    try:
        for replica, container in zip(placement, names):
            index, before = replica.index, states.get(container, "absent")
            if options.action == "stop":
                change = _stop(session, doors, index, container, before, options.check)
            else:
                change = _start(session, doors, index, container, before, options.check,
                                health_query(mode, replica.ports, models, address), models, deadline_s)
            changes.append(change)
    except TritonopsError as err:
        said.append(str(err))
    done = Maintained(release.id, tuple(changes))
    moved = [c for c in changes if c.before != c.after]
    verb = {"stop": "stopped", "start": "started"}[options.action]
    if moved:
        said.insert(0, f"{'would have ' if options.check else ''}{verb} " + ", ".join(
            f"replica {c.index} ({c.container})" for c in moved) + f" of release {release.id}")
    left = [c for c in changes if c.before == c.after]
    if left:
        said.append(", ".join(f"replica {c.index} already {c.after}" for c in left))
    if doors is not None and (drained := doors.summary(session.name, "before it stopped")):
        said.append(drained)
    status = "failed" if len(changes) < len(placement) else "changed" if moved else "ok"
    return HostResult(session.name, status, "; ".join(said), done)


def _stop(session: HostSession, doors, index: int, container: str, before: str, check: bool) -> ReplicaChange:
    if before != "running":
        return ReplicaChange(index, container, before, before)
    if check:
        return ReplicaChange(index, container, before, "exited")
    if doors is not None and not doors.no_drain:
        if missing := doors.unanswered():
            raise TritonopsError(f"replica {index}: not stopped: balancer {', '.join(missing)} could not be reached "
                                 "to drain it first; run again when it answers, or with --no-drain")
        doors.drain(session.name, index)  # left drained: the balancers send it nothing until `start`
    result = session.transport.run(shlex.join(commands.stop(container, STOP_TIMEOUT_S)), timeout=STOP_TIMEOUT_S + 60)
    if not result.ok:
        raise TritonopsError(f"replica {index}: docker stop {container} failed: {result.tail(1)}")
    return ReplicaChange(index, container, before, "exited")


def _start(session: HostSession, doors, index: int, container: str, before: str, check: bool, probe, models,
           deadline_s: float) -> ReplicaChange:
    if before == "absent":
        raise TritonopsError(f"replica {index}: no container {container} on the host: `tritonops deploy` makes it")
    if before == "running":
        return ReplicaChange(index, container, before, before)
    if check:
        return ReplicaChange(index, container, before, "running")
    result = session.transport.run(shlex.join(commands.start(container)), timeout=120)
    if not result.ok:
        raise TritonopsError(f"replica {index}: docker start {container} failed: {result.tail(1)}")
    deadline = time.monotonic() + deadline_s
    while True:
        health = parse_health(session.transport.run(shlex.join(probe.argv), timeout=30).stdout)
        if health.get("ready") and all((health.get("models") or {}).get(m) for m in models):
            break
        if time.monotonic() > deadline:
            raise TritonopsError(f"replica {index}: {container} started but was not ready after {deadline_s:.0f} s "
                                 "(`tritonops logs` says why)")
        time.sleep(POLL_S)
    if doors is not None:  # the balancers send to it again once it answers
        doors.ready(session.name, [(balancer, backend, server) for balancer in doors.balancers
                                   for backend, server in doors.backends(session.name, index)])
    return ReplicaChange(index, container, before, "running")
