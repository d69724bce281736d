"""Zero-downtime rolling behind the balancers (issues #31, #41): when a deploy has balancers, a host's serve step runs
replica by replica, and before each replica stops, every balancer of the inventory — whatever --limit selects, as
Ansible's `delegate_to` reaches a host outside the play — drains it (HAProxy's runtime API over SSH: no new request
goes to it, the ones in flight finish, bounded by `tritonops_drain_timeout_s`); once it has passed its gate, or its
previous release is back, the balancers set it ready again; then the next one. The other replicas answer meanwhile.

Hosts roll at once (one batch of the play), each one replica at a time; across hosts, a deployment's door keeps at
least half its servers in service: a replica drains only while fewer than half of them (at least one) are out, so
two hosts of one replica each never both leave the door.

A balancer that cannot be reached would keep sending to a replica that stops: before a host's first replica stops,
every balancer is asked once (the answer kept for the run); if one does not answer, the host's replicas are not
restarted (its serve step fails, naming the balancer; the balancer is `unreachable`, exit 4) unless the run was
given `--no-drain`, which restarts them undrained and says so. A balancer that does not know the replica yet (the
first deploy behind it: its door is made after the run), or whose HAProxy is not running, has nothing to drain: the
replica restarts as it would without one.
"""

from __future__ import annotations

import shlex
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from tritonops.door.runtime import (RuntimeApiError, find_server, parse_servers_state, parse_stat, set_server_address,
                                    set_server_check_port, set_server_state, show_servers_state, show_stat)
from tritonops.door.runtime_program import read_send, read_wait, send_argv, wait_drained_argv
from tritonops.errors import InputError
from tritonops.operations.execute import run_step
from tritonops.operations.serve import ServeStep
from tritonops.operations.steps import StepFailed
from tritonops.planning.door import DEFAULT_DRAIN_S, door, server_name
from tritonops.render.door_config import grpc_backend, http_backend
from tritonops.results import HostResult
from tritonops.transport.base import CommandTimeout, Unreachable
from tritonops.transport.sessions import HostSession, SessionPool

RUNTIME_TIMEOUT_S = 30
UP_WAIT_S = 15  # for HAProxy's health checks to see a replica that passed its gate (every 2 s, 2 passes)


def drains_at_once(servers: int) -> int:
    """How many of a door's `servers` one run may have drained at once: fewer than half of them, at least one."""
    return max(1, servers // 2)


@dataclass
class DoorRollout:
    """The deploy's step runner (playbook.host_task.RunHooks.step_runner): a serve step replica by replica, each
    drained on every balancer's own session first."""
    pool: SessionPool
    balancers: tuple[str, ...]             # inventory names of the run's balancer hosts
    deployments: dict[str, str]            # GPU host -> its deployment
    drain_timeout_s: float = 120.0
    no_drain: bool = False                 # --no-drain: replicas restart undrained, said per host
    notes: dict[str, list[str]] = field(default_factory=dict)  # GPU host -> what draining said (not failures)
    drained: dict[str, list[str]] = field(default_factory=dict)  # GPU host -> each replica drained, and how long
    pointed: dict[str, list[str]] = field(default_factory=dict)  # GPU host -> each server sent to a booted replica
    unreachable: dict[str, str] = field(default_factory=dict)   # balancer -> why it could not be asked
    _asked: dict[str, bool] = field(default_factory=dict, repr=False)  # balancer -> asked once this run
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _turns: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _out: dict[str, int] = field(default_factory=dict, repr=False)     # deployment -> its replicas drained now
    _sizes: dict[str, int] = field(default_factory=dict, repr=False)   # deployment -> servers in its door

    def summary(self, host: str, when: str = "before each restart") -> str | None:
        """What draining did on a host's rollout, one line (None: nothing was drained or said)."""
        said = [f"drained {', '.join(self.drained[host])} {when}"] if self.drained.get(host) else []
        if self.pointed.get(host):
            said.append(f"sent {', '.join(self.pointed[host])} once it passed its gate, before the old one stopped")
        return "; ".join(said + self.notes.get(host, [])) or None

    def __call__(self, session: HostSession, step):
        """Carry out `step` on the host's session: a serve step behind the door (each replica drained on every
        balancer before it leaves, set ready once it serves again, in its turn), any other as it is."""
        if not isinstance(step, ServeStep) or not self.balancers:
            return run_step(session.transport, step)
        if self.no_drain:
            self.notes.setdefault(session.name, []).append(
                f"not drained on {', '.join(self.balancers)} (--no-drain): its replicas restarted under traffic")
            return run_step(session.transport, step)
        if missing := self.unanswered():
            raise StepFailed(f"not restarted: balancer {', '.join(missing)} could not be reached to drain its "
                             f"replicas first ({'; '.join(self.unreachable[b] for b in missing)}); run again when it "
                             "answers, or with --no-drain to restart them undrained", None)
        return step.run_behind(session.transport, HostDoor(self, session.name))

    @contextmanager
    def _turn(self, deployment: str):
        """A replica's drain-restart-ready, once the deployment's door keeps at least half its servers in service
        without it (at least one out at a time): hosts roll at once, and two hosts of one replica each must not
        both leave the door."""
        with self._turns:
            if deployment not in self._sizes:
                self._sizes[deployment] = self._door_size(deployment)
            size = self._sizes[deployment]
            if size:
                self._turns.wait_for(lambda: self._out.get(deployment, 0) < drains_at_once(size))
                self._out[deployment] = self._out.get(deployment, 0) + 1
        if not size:  # no door yet (the first deploy behind it): nothing leaves it, hosts go at once
            yield
            return
        try:
            yield
        finally:
            with self._turns:
                self._out[deployment] -= 1
                self._turns.notify_all()

    def _door_size(self, deployment: str) -> int:
        """The servers of the deployment's HTTP door on the first balancer that says (0: no door yet)."""
        for balancer in self.balancers:
            if balancer in self.unreachable:
                continue
            backend = http_backend(deployment)
            try:
                rows = parse_stat(self._send(balancer, show_stat(backend)))
            except (RuntimeApiError, Unreachable, CommandTimeout):
                continue
            return sum(1 for row in rows if row.kind == "server" and row.backend == backend)
        return 0

    def unanswered(self) -> list[str]:
        """The balancers that could not be reached, each asked once per run (a paused one costs one timeout)."""
        with self._lock:
            for balancer in self.balancers:
                if self._asked.get(balancer):
                    continue
                try:
                    self._send(balancer, "show info")
                except RuntimeApiError:
                    pass  # it answered: no HAProxy running there yet, nothing to drain
                except (Unreachable, CommandTimeout) as err:
                    self.unreachable[balancer] = str(err)
                self._asked[balancer] = True
            return [balancer for balancer in self.balancers if balancer in self.unreachable]

    def backends(self, host: str, index: int) -> list[tuple[str, str]]:
        deployment = self.deployments[host]
        server = server_name(host, index)
        return [(http_backend(deployment), server), (grpc_backend(deployment), server)]

    def drain(self, host: str, index: int) -> list[tuple[str, str, str]]:
        """Every (balancer, backend, server) that now drains this replica, once its requests finished (or the
        drain timeout passed: said in the notes)."""
        drained = []
        for balancer in self.balancers:
            for backend, server in self.backends(host, index):
                try:
                    self._send(balancer, set_server_state(backend, server, "drain"))
                except RuntimeApiError:
                    continue  # no such server there yet, or no HAProxy running: nothing to drain
                except (Unreachable, CommandTimeout) as err:  # the deploy goes on: said, not failed
                    self.notes.setdefault(host, []).append(f"{balancer} could not drain {server}: {err}")
                    break
                drained.append((balancer, backend, server))
        for balancer, backend, server in drained:
            argv = wait_drained_argv(backend, server, self.drain_timeout_s)
            try:
                result = self.pool.session(balancer).transport.run(
                    shlex.join(argv), timeout=self.drain_timeout_s + RUNTIME_TIMEOUT_S)
                waited = read_wait(result.exit_code, result.stdout, result.stderr)
            except (RuntimeApiError, Unreachable, CommandTimeout) as err:
                self.notes.setdefault(host, []).append(f"{balancer}: {server}: {err}")
                continue
            if waited.drained:
                self.drained.setdefault(host, []).append(f"{backend}/{server} on {balancer} ({waited.waited_s:.1f} s)")
            else:
                self.notes.setdefault(host, []).append(
                    f"{balancer}: {backend}/{server} still had {waited.scur} request(s) after {self.drain_timeout_s:g} s "
                    "of draining")
        return drained

    def point(self, host: str, index: int, http_port: int, grpc_port: int | None) -> list[tuple[str, str, str]]:
        """The replica's servers on every balancer sent to its container on the other slot (Kamal's order: the new
        container answers there, the old one still runs): the HTTP door's at `http_port`, the gRPC door's at
        `grpc_port` with its health checks at `http_port`. New requests go there at once; the ones in flight on
        the old container finish as it stops. Each (balancer, backend, server) re-pointed, to be set ready."""
        pointed = []
        for balancer in self.balancers:
            if balancer in self.unreachable:
                continue
            for backend, server in self.backends(host, index):
                port = http_port if backend == http_backend(self.deployments[host]) else grpc_port
                if port is None:
                    continue
                try:
                    states = parse_servers_state(self._send(balancer, show_servers_state(backend)))
                    found = next((st for st in states if st.server == server), None)
                    if found is None:
                        continue  # the door does not know the replica yet: its file is written after the run
                    self._send(balancer, set_server_address(backend, server, found.address, port))
                    if port != http_port:
                        self._send(balancer, set_server_check_port(backend, server, http_port))
                except RuntimeApiError:
                    continue  # no HAProxy running there, or no such backend: nothing to point
                except (Unreachable, CommandTimeout) as err:
                    self.notes.setdefault(host, []).append(f"{balancer} could not point {server} at its new "
                                                           f"container: {err}")
                    break
                pointed.append((balancer, backend, server))
                self.pointed.setdefault(host, []).append(f"{backend}/{server} on {balancer} -> :{port}")
        return pointed

    def ready(self, host: str, servers: list[tuple[str, str, str]]) -> None:
        """Each drained server ready again, then, before the next replica drains, seen UP by HAProxy's health
        checks (a replica still DOWN there while the next one drains would leave the door with one less)."""
        back = []
        for balancer, backend, server in servers:
            try:
                self._send(balancer, set_server_state(backend, server, "ready"))
                back.append((balancer, backend, server))
            except (RuntimeApiError, Unreachable, CommandTimeout) as err:
                self.notes.setdefault(host, []).append(f"{balancer}: {server} could not be set ready: {err}")
        deadline = time.monotonic() + UP_WAIT_S
        for balancer, backend, server in back:
            while True:
                try:
                    answer = self._send(balancer, show_stat(backend))
                    status = find_server(parse_stat(answer), backend, server).status
                except (RuntimeApiError, Unreachable, CommandTimeout) as err:
                    self.notes.setdefault(host, []).append(f"{balancer}: {server}: {err}")
                    break
                if status == "UP":
                    break
                if time.monotonic() > deadline:
                    self.notes.setdefault(host, []).append(f"{balancer}: {backend}/{server} was {status} "
                                                           f"{UP_WAIT_S} s after it was set ready")
                    break
                time.sleep(0.5)

    def _send(self, balancer: str, command: str) -> str:
        """HAProxy's answer to one runtime command on the balancer."""
        transport = self.pool.session(balancer).transport
        result = transport.run(shlex.join(send_argv([command])), timeout=RUNTIME_TIMEOUT_S)
        return read_send(result.exit_code, result.stdout, result.stderr)[0].text


def door_rollout(pool: SessionPool, ready, balancers, deployments, options) -> DoorRollout | None:
    """With balancers (every one of the inventory: RunInputs.doors), the serve steps of the `ready` hosts run
    replica by replica, each drained on every balancer first; None without any, or in --check.
    `deployments`: host -> (root, deployment)."""
    if not balancers or options.check:
        return None
    timeouts = []
    for host in balancers:
        try:
            timeouts.append(door(host).drain_timeout_s)
        except InputError:
            continue  # said by the door phase, for that balancer
    return DoorRollout(pool, tuple(host.name for host in balancers), {name: deployments[name][1] for name in ready},
                       max(timeouts, default=DEFAULT_DRAIN_S), no_drain=options.no_drain)


def said_drained(rollout: DoorRollout | None, hosts, record) -> None:
    """A `drain` result for each host whose rollout drained something, or has something to say about it; an
    `unreachable` one for each balancer that could not be asked."""
    for name in (hosts if rollout else ()):
        if said := rollout.summary(name):
            record(HostResult(name, "ok", said, task="drain"))
    for balancer, why in (rollout.unreachable.items() if rollout else ()):
        record(HostResult(balancer, "unreachable", f"could not be reached to drain the replicas it fronts: {why}",
                          task="drain"))


@dataclass
class HostDoor:
    """The door as one host's rollout sees it (operations.serve_rollout.ReplicaDoor): its replicas by index, drained
    and set ready on every balancer, each in its turn. A replica drained and not set ready when its turn ends (its
    rollout stopped half-way) is set ready then: HAProxy's health checks say whether it answers."""
    rollout: DoorRollout
    host: str
    _drained: dict[int, list[tuple[str, str, str]]] = field(default_factory=dict, repr=False)

    @contextmanager
    def turn(self, index: int):
        with self.rollout._turn(self.rollout.deployments[self.host]):
            try:
                yield
            finally:
                self.ready(index)

    def drain(self, index: int) -> None:
        self._drained.setdefault(index, []).extend(self.rollout.drain(self.host, index))

    def ready(self, index: int, at: tuple[int, int | None] | None = None) -> None:
        servers = self._drained.pop(index, [])
        if at is not None:  # its container on the other slot: every balancer's servers sent there first
            pointed = self.rollout.point(self.host, index, *at)
            servers += [server for server in pointed if server not in servers]
        if servers:
            self.rollout.ready(self.host, servers)
