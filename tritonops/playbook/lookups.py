"""lookup('template', NAME) and lookup('file', NAME) in task arguments, as in Ansible.

    content: "{{ lookup('template', 'config.pbtxt.j2') }}"

A template is rendered over the same variables as the task (`item` included); both look in the
role's templates/ (files/) first, then next to the playbook. Names stay inside those folders.
"""

from __future__ import annotations

import os
from typing import Any

from tritonops.inventory.paths import display_path
from tritonops.playbook.keys import did_you_mean
from tritonops.playbook.model import PlaybookError, Task
from tritonops.playbook.templating import Scope, render_file
from tritonops.values.files import read_regular_text

MAX_TEMPLATE_BYTES = 16 * 1024 * 1024
KINDS = ("template", "file")


class Lookup:
    """Callable from templates; `scope` is set once the scope that holds it exists."""

    def __init__(self, task: Task, where: str):
        self.task = task
        self.where = where
        self.scope: Scope | None = None

    def __call__(self, kind: str, name: str, *more: Any, **options: Any) -> str:
        if kind not in KINDS:
            raise PlaybookError(f"lookup('{kind}', ...) is not supported{did_you_mean(str(kind), KINDS)}", self.where)
        if more or options:
            raise PlaybookError(f"lookup('{kind}', ...) takes one file name", self.where)
        folders = self.task.templates_dirs if kind == "template" else self.task.files_dirs
        path = _find(str(name), folders, kind, self.where)
        shown = display_path(path)
        text = read_regular_text(path, shown, max_bytes=MAX_TEMPLATE_BYTES, what=f"{kind} file")
        if kind == "file":
            return text
        assert self.scope is not None
        return render_file(text, shown, self.scope)


def _find(name: str, folders: tuple[str, ...], kind: str, where: str) -> str:
    if not name or os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
        raise PlaybookError(f"lookup('{kind}', {name!r}): name a file inside {kind}s/", where)
    for folder in folders:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    looked = ", ".join(display_path(folder) for folder in folders)
    known = sorted({entry for folder in folders if os.path.isdir(folder) for entry in os.listdir(folder)})
    raise PlaybookError(f"lookup('{kind}', {name!r}): no such file in {looked}{did_you_mean(name, known)}", where)
