"""One compiled task on one host: read facts, work out the steps still needed, carry them out.

Facts are read right before the steps are worked out, or taken from the batch's prefetch (every
task's queries answered in one round trip when the batch starts, see runner.py) as long as nothing
has changed on the host since: the first step carried out drops the prefetch, so no task ever sees
facts older than the host's last change. In check mode the steps are only reported (nothing
changes, so the prefetch serves the whole play); a task is `changed` when it had steps to do.
A step that learns something while it runs returns it with its result, typed (`Learned`: the serve
step's ServeOutcome with the gate's figures, the weights steps' bytes moved); a step that knows it
before running offers `outcome_of(result)` (the release it made). The task's result carries them, and
an outcome's `note`, if it has one, follows the step's description in the one-line message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritonops.facts.queries import Facts
from tritonops.facts.query_program import read_facts
from tritonops.operations.base import Args, Operation
from tritonops.operations.execute import run_step
from tritonops.operations.steps import Learned
from tritonops.playbook.diffs import file_diffs
from tritonops.results import HostResult
from tritonops.transport.sessions import HostSession

MSG_STEPS = 5  # steps named in a result's one-line msg; the payload has all of them


OUTPUT_CHARS = 4000  # of a step's command output kept for -vv (its end: where errors are)


@dataclass(frozen=True)
class StepRun:
    """One step as it was carried out: what it did (its command), how long it took, what it printed."""

    said: str
    seconds: float
    output: str = ""


@dataclass(frozen=True)
class TaskOutcome:
    """A task result's payload: which operation ran, the steps that were (or, in check mode, would be)
    carried out, and what those steps learned, typed (a failed task: the failing step's, if it said)."""

    operation: str
    steps: tuple[str, ...] = ()
    check: bool = False
    outcomes: tuple[object, ...] = ()
    runs: tuple[StepRun, ...] = ()   # the steps carried out (none in check mode), for -v and -vv
    details: tuple[str, ...] = ()    # for -v: what the steps start, in full (a replica's `docker run`)

    def outcome(self, kind: type):
        """The last outcome of that type, or None."""
        found = [outcome for outcome in self.outcomes if isinstance(outcome, kind)]
        return found[-1] if found else None


StepRunner = Callable[[HostSession, Any], Any]  # (session, step) -> what run_step would return


@dataclass(frozen=True)
class RunHooks:
    """What a run lends the steps of its tasks, typed: who runs some steps itself (the deploy's door rollout runs a
    serve step replica by replica, each drained on the balancers' own sessions first), and where a long step tells
    its bytes as it goes (a weights push)."""
    step_runner: StepRunner | None = None
    on_progress: Callable[[Any], None] | None = None


NO_HOOKS = RunHooks()


def _run(session: HostSession, step, hooks: RunHooks):
    """A step that can tell its bytes as it goes (a weights transfer) does, where the run listens; the others go
    to the run's step runner, else run plainly."""
    if hooks.on_progress is not None and hasattr(step, "run_with_progress"):
        return step.run_with_progress(session.transport, hooks.on_progress)
    if hooks.step_runner is not None:
        return hooks.step_runner(session, step)
    return run_step(session.transport, step)


def run_host_task(session: HostSession, operation: Operation, args_list: Sequence[Args], *, check: bool,
                  diff: bool, hooks: RunHooks = NO_HOOKS,
                  prefetched: MutableMapping[str, Facts] | None = None) -> HostResult[TaskOutcome]:
    """The task on one host. `prefetched`: the run's facts read ahead per host (used when they cover the task's
    queries; the host's are dropped once a step changes it)."""
    done: list[str] = []
    diffs: list[str] = []
    learned: list[object] = []
    runs: list[StepRun] = []
    details: list[str] = []
    for args in args_list:
        queries = list(operation.facts(args))
        ahead = prefetched.get(session.name) if prefetched is not None else None
        facts = ahead if ahead is not None and ahead.covers(queries) else read_facts(session.transport, queries)
        steps = list(operation.steps(args, facts))
        if diff and steps:
            diffs.append(file_diffs(session.transport, steps, facts))
        for step in steps:
            said = step.describe()
            details += step.details() if hasattr(step, "details") else ()
            if not check:
                if prefetched is not None:
                    prefetched.pop(session.name, None)  # the host changes: facts read ahead may be stale now
                started = time.monotonic()
                result = _run(session, step, hooks)
                runs.append(StepRun(said, time.monotonic() - started, _output(result)))
                outcome = _outcome(step, result)
                if getattr(outcome, "found_serving", False):
                    continue  # a step that only checks (a pipeline's member) and found nothing to do
                if outcome is not None:
                    learned.append(outcome)
                    note = getattr(outcome, "note", None)
                    said = f"{said} ({note})" if note else said
            done.append(said)
    status = "changed" if done else "ok"
    msg = "; ".join(done[:MSG_STEPS]) + (f"; and {len(done) - MSG_STEPS} more" if len(done) > MSG_STEPS else "")
    if check and done:
        msg = "would " + msg
    if hasattr(operation, "message"):  # an operation that says something of its own (debug)
        msg = "; ".join(filter(None, [*(operation.message(args) for args in args_list), msg]))
    return HostResult(session.name, status, msg,
                      TaskOutcome(operation.name, tuple(done), check, tuple(learned), tuple(runs), tuple(details)),
                      "".join(diffs) or None)


def _outcome(step, result) -> object | None:
    if isinstance(result, Learned):
        return result.outcome
    return step.outcome_of(result) if hasattr(step, "outcome_of") else None


def _output(result) -> str:
    text = ((result.stdout or "") + (result.stderr or "")).strip()
    return text[-OUTPUT_CHARS:]
