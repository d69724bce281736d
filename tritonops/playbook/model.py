"""What a playbook is once read: plays, roles and tasks as data, each with the file:line it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tritonops.errors import InputError
from tritonops.inventory.model import Setting


class PlaybookError(InputError):
    """A mistake in a playbook or role, found before any host is touched; the CLI exits 5 (bad input)."""


@dataclass(frozen=True)
class Template:
    """A string value as written, with where it was written (for errors while rendering it)."""

    text: str
    where: str


@dataclass(frozen=True)
class Task:
    name: str
    operation: str
    args: dict[str, Any]  # values as written; strings are Jinja templates
    where: str  # file:line of the task
    arg_lines: dict[str, str] = field(default_factory=dict)  # argument -> file:line
    key_lines: dict[str, str] = field(default_factory=dict)  # task key (when, loop, ...) -> file:line
    when: tuple[str, ...] = ()  # Jinja expressions, all must hold
    tags: frozenset[str] = frozenset()  # its own and inherited (play, role)
    notify: tuple[str, ...] = ()
    loop: Any = None  # a list, or a "{{ expr }}" string; None: no loop
    role: str | None = None
    templates_dirs: tuple[str, ...] = ()  # where lookup('template', ...) looks, first match wins
    files_dirs: tuple[str, ...] = ()  # where lookup('file', ...) looks

    def line_of(self, key: str) -> str:
        return self.key_lines.get(key, self.where)


@dataclass(frozen=True)
class Role:
    name: str
    path: str
    defaults: dict[str, Setting]
    tasks: tuple[Task, ...]
    handlers: tuple[Task, ...]


@dataclass(frozen=True)
class Play:
    name: str
    hosts: str
    where: str
    hosts_where: str
    serial: tuple[int | str, ...] = ()  # empty: one batch of every host
    max_fail_percentage: float | None = None
    vars: dict[str, Setting] = field(default_factory=dict)
    roles: tuple[Role, ...] = ()
    tasks: tuple[Task, ...] = ()  # roles' tasks first, then the play's own, in order
    handlers: tuple[Task, ...] = ()  # roles' handlers first, then the play's own

    @property
    def defaults(self) -> dict[str, Setting]:
        """The role defaults of this play: a later role's default wins over an earlier one's."""
        merged: dict[str, Setting] = {}
        for role in self.roles:
            merged.update(role.defaults)
        return merged


@dataclass(frozen=True)
class Playbook:
    path: str
    plays: tuple[Play, ...]
