"""run_playbook: a compiled playbook carried out over a SessionPool, play by play, batch by batch.

Like Ansible's linear strategy: within a batch (`serial`), each task runs on the batch's hosts in
parallel (at most --forks at once) and the next task starts when all are done. A host that fails or
cannot be reached gets no more tasks in this run. Handlers run at the end of each batch, once, on the
hosts where a task that notified them changed something, in the order they are defined (a handler
may notify a later one). Handlers are not filtered by --tags: a notified handler runs. In check
mode nothing is carried out, handlers included; results say what would change.

The run stops (later batches and plays untouched) when a batch has more failed hosts than the
play's max_fail_percentage allows (checked after every task, as Ansible does), or, without it,
when every host of a batch failed; or when the caller's `after_batch` (given each batch that ran to its
end, as a BatchDone) says why it must stop: deploy's bench gate on the first batch is one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tritonops.errors import TritonopsError
from tritonops.facts.queries import Facts
from tritonops.facts.query_program import read_facts
from tritonops.playbook.batches import batches
from tritonops.playbook.compile import CompiledPlay, CompiledPlaybook, CompiledTask
from tritonops.playbook.events import BatchDone, BatchStarted, HostDone, OnEvent, PlayStarted, TaskStarted
from tritonops.operations.steps import StepFailed
from tritonops.playbook.host_task import NO_HOOKS, RunHooks, TaskOutcome, run_host_task
from tritonops.results import HostResult, Recap
from tritonops.transport.base import CommandTimeout, Unreachable
from tritonops.transport.sessions import HostSession, SessionPool, described, one_line


@dataclass(frozen=True)
class PlaybookRun:
    results: tuple[HostResult, ...]  # one per task per host, in the order they ran
    recap: Recap
    plays: tuple[str, ...]  # the plays that ran on at least one host
    stopped_reason: str | None = None  # why the run stopped early; None when it went to the end

    @property
    def ok(self) -> bool:
        return self.stopped_reason is None and self.recap.all_ok


AfterBatch = Callable[[BatchDone], "str | None"]  # why the run must stop after this batch, or None
Confirm = Callable[[str], str]  # --step: asked before each task (its name): "y" run it, "n" skip it, "c" run the rest


def run_playbook(compiled: CompiledPlaybook, pool: SessionPool, *, check: bool = False, diff: bool = False,
                 on_event: OnEvent | None = None, after_batch: AfterBatch | None = None,
                 confirm: Confirm | None = None, hooks: RunHooks = NO_HOOKS) -> PlaybookRun:
    """`hooks`: what the run lends its tasks' steps (host_task.RunHooks)."""
    run = _Run(pool, check, diff, on_event, confirm, hooks)
    plays = []
    stopped = None
    for play in compiled.plays:
        hosts = tuple(host for host in play.hosts if host not in run.failed)
        run.emit(PlayStarted(play.play.name, hosts, check))
        if not hosts or not play.tasks:
            continue
        plays.append(play.play.name)
        cut = batches(hosts, play.play.serial)
        for number, batch in enumerate(cut, 1):
            run.emit(BatchStarted(play.play.name, number, len(cut), tuple(batch)))
            first = len(run.results)
            stopped = _batch(run, play, batch)
            if not stopped:
                done = BatchDone(play.play.name, number, len(cut), tuple(h for h in batch if h not in run.failed),
                                 tuple(run.results[first:]))
                run.emit(done)
                stopped = after_batch(done) if after_batch is not None else None
            if stopped:
                break
        if stopped:
            break
    return PlaybookRun(tuple(run.results), Recap.of(run.results), tuple(plays), stopped)


class _Run:
    def __init__(self, pool: SessionPool, check: bool, diff: bool, on_event: OnEvent | None,
                 confirm: Confirm | None = None, hooks: RunHooks = NO_HOOKS):
        self.pool = pool
        self.hooks = hooks
        self.prefetched: dict[str, Facts] = {}  # host -> the batch's facts read ahead (dropped once a step changes it)
        self.confirm = confirm  # None once the user said "c" (continue without asking)
        self.check = check
        self.diff = diff
        self.results: list[HostResult] = []
        self.failed: set[str] = set()  # failed or unreachable: out for the rest of the run
        self._on_event = on_event
        self._lock = threading.Lock()

    def emit(self, event) -> None:
        if self._on_event is not None:
            with self._lock:
                self._on_event(event)


def _batch(run: _Run, play: CompiledPlay, batch: Sequence[str]) -> str | None:
    active = list(batch)
    notified: dict[str, set[str]] = {}
    _prefetch(run, play, active)
    for task in play.tasks:
        if run.confirm is not None:
            answer = run.confirm(task.task.name)
            if answer == "n":
                continue
            if answer == "c":
                run.confirm = None
        _task(run, play, task, active, notified)
        stop = _stop_reason(play, batch, active)
        if stop:
            return stop
    for name, handler in play.handlers.items():
        hosts = [host for host in active if host in notified.get(name, ())]
        if hosts:
            _task(run, play, handler, hosts, notified, handler=True)
            active[:] = [host for host in active if host not in run.failed]
            stop = _stop_reason(play, batch, active)
            if stop:
                return stop
    return None


def _prefetch(run: _Run, play: CompiledPlay, hosts: Sequence[str]) -> None:
    """Every task's fact queries for each host, answered in one round trip: a run with nothing to change
    reads each host once instead of once per task. A host where this fails simply reads per task."""
    def phase(session: HostSession) -> HostResult:
        queries = list(dict.fromkeys(query for compiled in play.tasks
                                     if not compiled.hosts[session.name].skipped
                                     for args in compiled.hosts[session.name].args
                                     for query in compiled.operation.facts(args)))
        if queries:
            run.prefetched[session.name] = read_facts(session.transport, queries)
        return HostResult(session.name, "ok")

    run.pool.run(phase, [host for host in hosts if host not in run.failed], task="prefetch")


def _stop_reason(play: CompiledPlay, batch: Sequence[str], active: list[str]) -> str | None:
    failed = len(batch) - len(active)
    if not failed:
        return None
    limit = play.play.max_fail_percentage
    where = f"play '{play.play.name}'"
    if limit is not None and failed > len(batch) * limit / 100:
        return (f"{where}: {failed} of {len(batch)} hosts of a batch failed, more than max_fail_percentage "
                f"{limit:g}% allows; later batches and plays were not run")
    if failed == len(batch):
        return f"{where}: every host of a batch failed; later batches and plays were not run"
    return None


def _task(run: _Run, play: CompiledPlay, compiled: CompiledTask, active: list[str],
          notified: dict[str, set[str]], *, handler: bool = False) -> None:
    task = compiled.task
    hosts = list(active)
    run.emit(TaskStarted(play.play.name, task.name, tuple(hosts), handler))
    results: dict[str, HostResult] = {}
    for host in hosts:
        planned = compiled.hosts[host]
        if planned.skipped:
            results[host] = HostResult(host, "skipped", planned.why, TaskOutcome(compiled.operation.name), task=task.name)
            run.emit(HostDone(play.play.name, results[host]))
    emitted: set[str] = set()

    def phase(session: HostSession) -> HostResult:
        result = _on_host(run, compiled, session)
        with run._lock:
            emitted.add(session.name)
        run.emit(HostDone(play.play.name, result))
        return result

    to_run = [host for host in hosts if host not in results]
    for result in run.pool.run(phase, to_run, task=task.name):  # a session that could not open: no phase ran
        results[result.host] = result
        if result.host not in emitted:
            run.emit(HostDone(play.play.name, result))
    for host in hosts:
        result = results[host]
        run.results.append(result)
        if result.failed:
            run.failed.add(host)
            active.remove(host)
        elif result.changed:
            for name in task.notify:
                notified.setdefault(name, set()).add(host)


def _on_host(run: _Run, compiled: CompiledTask, session: HostSession) -> HostResult:
    """The task on one host, every failure its own result (what the pool would make of it, but
    made here so the live display hears of each host as soon as it is done)."""
    started = time.monotonic()
    name = compiled.task.name
    try:
        result = run_host_task(session, compiled.operation, compiled.hosts[session.name].args,
                               check=run.check, diff=run.diff, hooks=run.hooks, prefetched=run.prefetched)
    except Unreachable as exc:
        run.pool.lost(session.name, str(exc))
        result = HostResult(session.name, "unreachable", one_line(str(exc)), TaskOutcome(compiled.operation.name))
    except StepFailed as exc:  # the step said what happened, typed: the result carries it
        result = HostResult(session.name, "failed", one_line(str(exc)),
                            TaskOutcome(compiled.operation.name, check=run.check, outcomes=(exc.outcome,)))
    except (CommandTimeout, TritonopsError) as exc:
        result = HostResult(session.name, "failed", one_line(str(exc)), TaskOutcome(compiled.operation.name))
    except Exception as exc:  # a bug or an unexpected host: that host's result, not the run's end
        result = HostResult(session.name, "failed", one_line(described(exc)), TaskOutcome(compiled.operation.name))
    return replace(result, task=name, elapsed_s=time.monotonic() - started)
