"""One compiled task on one host: read facts, work out the steps still needed, carry them out.

Facts are read right before the steps are worked out (never earlier: they would go stale). In
check mode the steps are only reported; a task is `changed` when it had steps to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tritonops.operations.base import Args, Operation
from tritonops.operations.execute import read_facts, run_step
from tritonops.playbook.diffs import file_diffs
from tritonops.results import HostResult
from tritonops.transport.sessions import HostSession

MSG_STEPS = 5  # steps named in a result's one-line msg; the payload has all of them


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
        facts = read_facts(session.transport, list(operation.facts(args)))
        steps = list(operation.steps(args, facts))
        if diff and steps:
            diffs.append(file_diffs(session.transport, steps, facts))
        for step in steps:
            if not check:
                run_step(session.transport, step)
            done.append(step.describe())
    status = "changed" if done else "ok"
    msg = "; ".join(done[:MSG_STEPS]) + (f"; and {len(done) - MSG_STEPS} more" if len(done) > MSG_STEPS else "")
    if check and done:
        msg = "would " + msg
    return HostResult(session.name, status, msg, TaskOutcome(tuple(done), check), "".join(diffs) or None)
