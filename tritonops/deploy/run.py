"""What deploy and rollback share: their options and report shapes, and the lock held over a run."""

from __future__ import annotations

import getpass
import os
import posixpath
import socket
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from tritonops.deploy import lock as host_lock
from tritonops.exit_codes import ExitCode, exit_code_of
from tritonops.planning import HostDeployPlan
from tritonops.playbook.events import HostDone, OnEvent, PhaseDone
from tritonops.playbook.runner import PlaybookRun
from tritonops.results import HostResult, Recap
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.transport.base import Traffic
from tritonops.transport.sessions import HostSession, SessionPool

Record = Callable[[HostResult], None]


@dataclass(frozen=True)
class DeployOptions:
    """How a deploy or rollback runs; what it runs on (playbook, inventory, --limit, -e) is its RunInputs."""

    tags: tuple[str, ...] = ("all",)
    skip_tags: tuple[str, ...] = ()
    check: bool = False
    diff: bool = False
    forks: int = 10
    accept_new_host_keys: bool = False
    break_lock: bool = False
    request: SizingRequest = field(default_factory=lambda: SizingRequest(model_ref=""))
    default_model: str | None = None
    model_name: str = "vllm_model"
    metrics: bool = True
    command: str = "deploy"
    audit_log: Path | None = None   # the controller's audit log of deploy events (None: not written)
    no_drain: bool = False          # replicas restart undrained (a balancer that cannot be reached refuses them)
    start_at_task: str | None = None  # --start-at-task: the playbook's tasks from the first it names
    step: Callable[[str], str] | None = None  # --step: asked before each task ("y", "n", "c")


@dataclass(frozen=True, kw_only=True)
class LockedRunOptions:
    """What a command that changes hosts under their deployment locks outside a playbook run (stop, start, prune)
    takes besides its own options; `command` is what the lock and the audit log name it."""

    check: bool = False
    forks: int = 10
    accept_new_host_keys: bool = False
    break_lock: bool = False
    audit_log: Path | None = None
    no_drain: bool = False   # stop: replicas stop without draining them on the balancers

    @property
    def command(self) -> str:
        raise NotImplementedError


@dataclass
class DeployReport:
    phases: list[HostResult] = field(default_factory=list)   # the controller's: facts, plan, lock, image, events...
    plans: dict[str, HostDeployPlan] = field(default_factory=dict)
    host_facts: dict[str, dict] = field(default_factory=dict)  # what the playbook saw per host
    run: PlaybookRun | None = None
    image_bytes: int = 0  # bytes of the image that left the controller
    image_relayed: dict[str, int] = field(default_factory=dict)  # host -> bytes of the image it got from another host
    weights_bytes: int = 0  # bytes of weights from controller folders that left the controller (deploy.weights_phase)
    traffic: Traffic = field(default_factory=Traffic)  # command channels of every host's session
    check: bool = False
    timeline: list[tuple[float, HostResult]] = field(default_factory=list)  # (when, result) as learned
    events: dict[str, list[dict]] = field(default_factory=dict)  # host -> its deploy events (deploy.events)
    bench_gate: Any = None  # deploy --bench-gate: what it found (deploy.bench_gate.GateReport); None: it did not run

    @property
    def results(self) -> list[HostResult]:
        """Every phase and task result, in the order the run learned them."""
        return [result for _, result in self.timeline]

    @property
    def recap(self) -> Recap:
        return Recap.of(self.results)

    @property
    def ok(self) -> bool:
        return self.recap.all_ok and (self.run is None or self.run.stopped_reason is None)

    @property
    def exit_code(self) -> ExitCode:
        """ansible-playbook's: 4 a host unreachable, 2 a host failed or the rollout stopped, else 0."""
        code = exit_code_of(result.status for result in self.results)
        if code == ExitCode.OK and self.run is not None and self.run.stopped_reason is not None:
            return ExitCode.HOST_FAILED
        return code

    def subscriber(self, clock: Callable[[], float] = time.time) -> OnEvent:
        """The report as a subscriber of the run's event stream: each host's phase and task result
        goes on the timeline, with when it was learned (the deploy events are built from it)."""
        def hear(event) -> None:
            if isinstance(event, PhaseDone):
                self.phases.append(event.result)
                self.timeline.append((clock(), event.result))
            elif isinstance(event, HostDone):
                self.timeline.append((clock(), event.result))
        return hear


def who() -> str:
    """user@controller, as a release and the deploy events name who made them."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


@contextmanager
def locked(pool: SessionPool, names: Sequence[str], deployments: dict[str, tuple[str, str]],
           options: DeployOptions | LockedRunOptions, record: Record) -> Iterator[list[str]]:
    """Each host's deployment lock for the length of the block (none in --check); yields the hosts that
    hold theirs (a refused one is recorded `failed`, naming the owner) and releases only our own."""
    owner = host_lock.LockOwner.here(options.command)
    held: list[str] = []
    try:
        if options.check:
            yield list(names)
            return
        for result in pool.run(_lock_phase(deployments, owner, options.break_lock), names, task="lock"):
            record(result)
            if result.ok:
                held.append(result.host)
        yield list(held)
    finally:
        if held:
            pool.run(_unlock_phase(deployments, owner), held, task="unlock")


def _lock_phase(deployments, owner, break_lock):
    def phase(session: HostSession) -> HostResult:
        root, deployment = deployments[session.name]
        outcome = host_lock.acquire(session.transport, posixpath.join(root, deployment), owner, break_lock=break_lock)
        if not outcome.acquired:
            return HostResult(session.name, "failed", host_lock.refusal(session.name, outcome))
        note = f"took over the lock of {outcome.held_by}" if outcome.held_by else "locked"
        return HostResult(session.name, "ok", note)
    return phase


def _unlock_phase(deployments, owner):
    def phase(session: HostSession) -> HostResult:
        root, deployment = deployments[session.name]
        host_lock.release(session.transport, posixpath.join(root, deployment), owner)
        return HostResult(session.name, "ok", "unlocked")
    return phase
