"""One compiled task on one host: read facts, work out the steps still needed, carry them out.

Facts are read right before the steps are worked out, or taken from the batch's prefetch (every
task's queries answered in one round trip when the batch starts, see runner.py) as long as nothing
has changed on the host since: the first step carried out drops the prefetch, so no task ever sees
facts older than the host's last change. In check mode the steps are only reported (nothing
changes, so the prefetch serves the whole play); a task is `changed` when it had steps to do.
A step that learns something worth saying while it runs (the serve step: log shipping degraded)
has `done_note(result) -> str | None`; its note follows the step's description in the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tritonops.facts.query_program import read_facts
from tritonops.operations.base import Args, Operation
from tritonops.operations.execute import run_step
from tritonops.playbook.diffs import file_diffs
from tritonops.results import HostResult
from tritonops.transport.sessions import HostSession

MSG_STEPS = 5
PREFETCH = "prefetched_facts"  # HostSession.extras key of the batch's prefetched facts  # steps named in a result's one-line msg; the payload has all of them


@dataclass(frozen=True)
class TaskOutcome:
    """A task result's payload: the steps that were (or, in check mode, would be) carried out."""

    steps: tuple[str, ...]
    check: bool


def run_host_task(session: HostSession, operation: Operation, args_list: Sequence[Args], *, check: bool,
                  diff: bool) -> HostResult[TaskOutcome]:
    done: list[str] = []
    diffs: list[str] = []
    for args in args_list:
        queries = list(operation.facts(args))
        prefetched = session.extras.get(PREFETCH)
        facts = prefetched if prefetched is not None and prefetched.covers(queries) else \
            read_facts(session.transport, queries)
        steps = list(operation.steps(args, facts))
        if diff and steps:
            diffs.append(file_diffs(session.transport, steps, facts))
        for step in steps:
            said = step.describe()
            if not check:
                session.extras.pop(PREFETCH, None)  # the host changes: prefetched facts may be stale now
                result = run_step(session.transport, step)
                note = step.done_note(result) if hasattr(step, "done_note") else None
                said = f"{said} ({note})" if note else said
            done.append(said)
    status = "changed" if done else "ok"
    msg = "; ".join(done[:MSG_STEPS]) + (f"; and {len(done) - MSG_STEPS} more" if len(done) > MSG_STEPS else "")
    if check and done:
        msg = "would " + msg
    return HostResult(session.name, status, msg, TaskOutcome(tuple(done), check), "".join(diffs) or None)
