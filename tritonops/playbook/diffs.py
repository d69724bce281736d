"""--diff: what a task's PutFile steps would change, as unified diffs of the files' text; and for a step that
starts something (a serve step), the command line it would start (its `diff_text`)."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from tritonops.facts.queries import Facts, FileFact, FileQuery
from tritonops.facts.query_program import read_facts
from tritonops.operations.steps import PutFile, Step
from tritonops.transport.base import Transport


def file_diffs(transport: Transport, steps: Sequence[Step], facts: Facts) -> str:
    """Diffs for the PutFile steps; the current text comes from the operation's own facts when it
    asked for it, else from one more fact read."""
    puts = [step for step in steps if isinstance(step, PutFile)]
    before = {step.path: _known(facts, step.path) for step in puts}
    unread = [path for path, fact in before.items() if fact is None or (fact.kind == "file" and fact.text is None)]
    if unread:
        more = read_facts(transport, [FileQuery(path, content=True) for path in unread])
        before.update({path: more.file(path) for path in unread})
    said = [step.diff_text() for step in steps if callable(getattr(step, "diff_text", None))]
    return "".join(unified(step, before[step.path]) for step in puts) + "".join(said)


def unified(step: PutFile, before: FileFact) -> str:
    try:
        after = step.content.decode("utf-8")
    except UnicodeDecodeError:
        after = None
    exists = before.kind == "file"
    if exists and before.text is None or after is None:
        return f"Binary files {step.path} differ\n"
    lines = list(difflib.unified_diff((before.text or "").splitlines(keepends=True) if exists else [],
                                      after.splitlines(keepends=True),
                                      fromfile=step.path if exists else "/dev/null", tofile=step.path))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    if exists and before.mode != step.mode:
        text = f"mode {before.mode:o} -> {step.mode:o}: {step.path}\n" + text
    return text


def _known(facts: Facts, path: str) -> FileFact | None:
    try:
        return facts.file(path)
    except KeyError:
        return None
