"""--diff: what a task's PutFile steps would change, as unified diffs of the files' text; and for a step that
starts something (a serve step), the command line it would start (its `diff_text`)."""

from __future__ import annotations

import difflib
import json
from dataclasses import replace
from collections.abc import Sequence

from tritonops.facts.queries import Facts, FileFact, FileQuery
from tritonops.facts.query_program import read_facts
from tritonops.operations.steps import PutFile, Step
from tritonops.transport.base import Transport


def file_diffs(transport: Transport, steps: Sequence[Step], facts: Facts) -> str:
    """Diffs for the PutFile steps; the current text comes from the operation's own facts when it
    asked for it, else from one more fact read. A step that takes the place of another file (`diff_from`: a new
    release's file, the serving release's same file) is compared with that one; a file that does not change
    shows nothing."""
    puts = [step for step in steps if isinstance(step, PutFile)]
    compared = {step.path: _compared_path(step) for step in puts}
    before = {path: _known(facts, path) for path in compared.values()}
    unread = [path for path, fact in before.items() if fact is None or (fact.kind == "file" and fact.text is None)]
    if unread:
        more = read_facts(transport, [FileQuery(path, content=True) for path in unread])
        before.update({path: more.file(path) for path in unread})
    notes = "".join(step.diff_text() for step in steps if not isinstance(step, PutFile) and hasattr(step, "diff_text"))
    return "".join(unified(step, _without(before[compared[step.path]], getattr(step, "diff_without", "")),
                           compared[step.path]) for step in puts) + notes


def _without(before: FileFact, key: str) -> FileFact:
    """The file's JSON text without `key` (what its host added after it was written), written as it was."""
    if not key or before.kind != "file" or before.text is None:
        return before
    try:
        data = json.loads(before.text)
    except ValueError:
        return before
    if not isinstance(data, dict) or key not in data:
        return before
    kept = {name: value for name, value in data.items() if name != key}
    return replace(before, text=json.dumps(kept, indent=2, sort_keys=False) + "\n")


def _compared_path(step: PutFile) -> str:
    return getattr(step, "diff_from", "") or step.path


def unified(step: PutFile, before: FileFact, before_path: str | None = None) -> str:
    try:
        after = step.content.decode("utf-8")
    except UnicodeDecodeError:
        after = None
    exists = before.kind == "file"
    if exists and before.text is None or after is None:
        return f"Binary files {step.path} differ\n"
    lines = list(difflib.unified_diff((before.text or "").splitlines(keepends=True) if exists else [],
                                      after.splitlines(keepends=True),
                                      fromfile=(before_path or step.path) if exists else "/dev/null",
                                      tofile=step.path))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    if exists and before.mode != step.mode:
        text = f"mode {before.mode:o} -> {step.mode:o}: {step.path}\n" + text
    return text


def _known(facts: Facts, path: str) -> FileFact | None:
    try:
        return facts.file(path)
    except KeyError:
        return None
