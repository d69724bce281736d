"""load_playbook: a playbook file (and the roles it names) -> a Playbook, strictly.

Every mapping is checked for unknown keys, every task names exactly one known operation, every
template string is compiled and every notified handler exists, each error at its file:line. Nothing
here reads variables or touches a host: `compile.py` renders, `runner.py` runs.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from typing import Any

from tritonops.inventory.draft import check_var_name
from tritonops.inventory.model import Setting
from tritonops.inventory.paths import display_path
from tritonops.inventory.yaml_lines import LinedMap, plain
from tritonops.errors import InputError
from tritonops.playbook.batches import check_serial
from tritonops.playbook.keys import at, check_keys, check_known_vars, did_you_mean, load_yaml, string_list
from tritonops.playbook.known_operations import OPERATIONS, operation_named
from tritonops.playbook.model import Play, Playbook, PlaybookError, Role, Task
from tritonops.playbook.roles import load_role, role_dirs
from tritonops.playbook.templating import check_expression, check_syntax, is_template

PLAY_KEYS = ("name", "hosts", "serial", "max_fail_percentage", "vars", "roles", "tags", "tasks", "handlers")
ROLE_ENTRY_KEYS = ("role", "name", "tags")
TASK_KEYS = ("name", "when", "tags", "notify", "loop")


def load_playbook(path: str, *, roles_path: Sequence[str] = ()) -> Playbook:
    """Read a playbook; roles come from `roles/` next to it, then each folder of `roles_path`."""
    shown = display_path(path)
    if not os.path.isfile(path):
        raise PlaybookError(f"no such playbook file: {path}", "playbook")
    data = load_yaml(path, shown)
    if not isinstance(data, list) or not data:
        raise PlaybookError("a playbook is a list of plays (- hosts: ...)", f"{shown}:1")
    folder = os.path.dirname(os.path.abspath(path))
    context = _Context(shown, folder, role_dirs(folder, roles_path))
    return Playbook(shown, tuple(_play(entry, index, context) for index, entry in enumerate(data)))


class _Context:
    def __init__(self, shown: str, folder: str, search: list[str]):
        self.shown = shown
        self.folder = folder
        self.search = search


def _play(data: Any, index: int, context: _Context) -> Play:
    shown = context.shown
    if not isinstance(data, LinedMap):
        raise PlaybookError(f"play {index + 1} must be a mapping (hosts:, roles:, tasks:)", shown)
    check_keys(data, PLAY_KEYS, shown, "a play")
    where = at(shown, data)
    hosts = data.get("hosts")
    if not isinstance(hosts, str) or not hosts.strip():
        raise PlaybookError("a play needs 'hosts:', an Ansible host pattern", at(shown, data, "hosts"))
    name = _name(data, shown, default=hosts)
    tags = frozenset(string_list(data["tags"], at(shown, data, "tags"), "tags")) if "tags" in data else frozenset()
    roles = tuple(_role(entry, data, context, tags) for entry in _list(data, "roles", shown))
    tasks = _tasks(data.get("tasks"), shown, role=None, tags=tags, folder=context.folder, base=data, key="tasks")
    handlers = _tasks(data.get("handlers"), shown, role=None, tags=frozenset(), folder=context.folder, base=data,
                      key="handlers")
    play = Play(name, hosts, where, at(shown, data, "hosts"),
                serial=check_serial(data.get("serial"), at(shown, data, "serial")),
                max_fail_percentage=_percentage(data, shown),
                vars=_vars(data, shown, context.folder),
                roles=roles,
                tasks=tuple(task for role in roles for task in role.tasks) + tasks,
                handlers=tuple(handler for role in roles for handler in role.handlers) + handlers)
    _check_handlers(play)
    return play


def _name(data: LinedMap, shown: str, default: str) -> str:
    name = data.get("name", default)
    if not isinstance(name, str) or not name.strip():
        raise PlaybookError("a name must be a non-empty string", at(shown, data, "name"))
    return name


def _list(data: LinedMap, key: str, shown: str) -> list:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise PlaybookError(f"'{key}' must be a list", at(shown, data, key))
    return value


def _role(entry: Any, play: LinedMap, context: _Context, play_tags: frozenset[str]) -> Role:
    where = at(context.shown, play, "roles")
    tags = play_tags
    if isinstance(entry, LinedMap):
        check_keys(entry, ROLE_ENTRY_KEYS, context.shown, "a role entry")
        where = at(context.shown, entry)
        if ("role" in entry) == ("name" in entry):
            raise PlaybookError("a role entry names its role with 'role:'", where)
        if "tags" in entry:
            tags = tags | set(string_list(entry["tags"], at(context.shown, entry, "tags"), "tags"))
        entry = entry.get("role", entry.get("name"))

    def reader(data, shown, *, role, tags, role_path):
        return _tasks(data, shown, role=role, tags=tags, folder=context.folder, role_path=role_path)

    return load_role(entry, where, context.search, reader, frozenset(tags))


def _tasks(data: Any, shown: str, *, role: str | None, tags: frozenset[str], folder: str,
           role_path: str | None = None, base: LinedMap | None = None, key: str | None = None) -> tuple[Task, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        where = at(shown, base, key) if base is not None else f"{shown}:1"
        raise PlaybookError("tasks must be a list of tasks (- name: ...)", where)
    dirs = ((os.path.join(role_path, "templates"),) if role_path else ()) + (os.path.join(folder, "templates"),)
    files = ((os.path.join(role_path, "files"),) if role_path else ()) + (os.path.join(folder, "files"),)
    return tuple(_task(entry, shown, role, tags, dirs, files, base, key) for entry in data)


def _task(data: Any, shown: str, role: str | None, inherited: frozenset[str], templates: tuple[str, ...],
          files: tuple[str, ...], base: LinedMap | None, key: str | None) -> Task:
    if not isinstance(data, LinedMap):
        where = at(shown, base, key) if base is not None else shown
        raise PlaybookError(f"a task must be a mapping (name:, and one operation), not {data!r}", where)
    where = at(shown, data)
    operation = _operation_key(data, shown)
    args = data[operation]
    if not isinstance(args, LinedMap):
        free_form = getattr(operation_named(operation), "free_form", None)  # e.g. command's shell string
        raise PlaybookError(free_form if free_form and isinstance(args, str) else
                            f"the arguments of '{operation}' must be a mapping (path: ..., ...)",
                            at(shown, data, operation))
    arg_lines = {name: at(shown, args, name) for name in args}
    _check_argument_names(operation, args, arg_lines, at(shown, data, operation))
    for name, value in args.items():
        check_syntax(value, arg_lines[name])
    when = _when(data, shown)
    loop = data.get("loop")
    if loop is not None:
        if isinstance(loop, str) and is_template(loop):
            check_syntax(loop, at(shown, data, "loop"))
        elif not isinstance(loop, list):
            raise PlaybookError("'loop' must be a list, or one '{{ expression }}' giving a list",
                                at(shown, data, "loop"))
        else:
            check_syntax(loop, at(shown, data, "loop"))
    tags = inherited | set(string_list(data["tags"], at(shown, data, "tags"), "tags")) if "tags" in data \
        else inherited
    notify = string_list(data["notify"], at(shown, data, "notify"), "notify") if "notify" in data else ()
    return Task(_name(data, shown, default=operation), operation, plain(args), where, arg_lines,
                {str(key): at(shown, data, key) for key in data}, when, frozenset(tags), notify, plain(loop), role,
                templates, files)


def _check_argument_names(operation: str, args: LinedMap, lines: dict, where: str) -> None:
    """Unknown and missing arguments, found from the task's text alone (before any variable or host)."""
    found = operation_named(operation, where)
    fields = found.Args.model_fields
    refused = getattr(found, "refused_arguments", {})  # an Ansible argument with its own answer
    for name in args:
        if name in refused:
            raise PlaybookError(f"'{operation}' has no argument '{name}': {refused[name]}", lines[name])
        if name not in fields:
            raise PlaybookError(f"'{operation}' has no argument '{name}'{did_you_mean(str(name), list(fields))}",
                                lines[name])
    for name, field in fields.items():
        if field.is_required() and name not in args:
            raise PlaybookError(f"'{operation}' needs the argument '{name}'", where)


def _operation_key(data: LinedMap, shown: str) -> str:
    others = [key for key in data if key not in TASK_KEYS]
    if not others:
        raise PlaybookError("a task names one operation, e.g. put_file: {path: ..., content: ...}; known: "
                            + ", ".join(sorted(OPERATIONS)), at(shown, data))
    for key in others:
        where = at(shown, data, key)
        if key not in OPERATIONS and _close_to_keyword(str(key)):  # 'tag:', 'notfy:' are not operations
            raise PlaybookError(f"unknown key '{key}' in a task{did_you_mean(str(key), TASK_KEYS)}", where)
        try:
            operation_named(str(key), where)
        except InputError as err:
            raise PlaybookError(err.what, err.where) from None
    if len(others) > 1:
        raise PlaybookError(f"a task names one operation, this one names {len(others)}: {', '.join(others)}",
                            at(shown, data, others[1]))
    return others[0]


def _close_to_keyword(key: str) -> bool:
    return bool(difflib.get_close_matches(key, TASK_KEYS, n=1, cutoff=0.75))


def _when(data: LinedMap, shown: str) -> tuple[str, ...]:
    if "when" not in data:
        return ()
    where = at(shown, data, "when")
    value = data["when"]
    conditions = [value] if not isinstance(value, list) else value
    result = []
    for condition in conditions:
        if isinstance(condition, bool):
            condition = "true" if condition else "false"
        if not isinstance(condition, str) or not condition.strip():
            raise PlaybookError(f"'when' is a Jinja expression (or a list of them), not {condition!r}", where)
        if "{{" in condition or "{%" in condition:
            raise PlaybookError("'when' is already an expression: write it without {{ }}", where)
        check_expression(condition, where)
        result.append(condition)
    return tuple(result)


def _percentage(data: LinedMap, shown: str) -> float | None:
    if "max_fail_percentage" not in data:
        return None
    value = data["max_fail_percentage"]
    if isinstance(value, str) and value.endswith("%"):
        value = value[:-1]
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if isinstance(value, bool) or not 0 <= number <= 100:
        raise PlaybookError(f"max_fail_percentage must be a number from 0 to 100, not {data['max_fail_percentage']!r}",
                            at(shown, data, "max_fail_percentage"))
    return number


def _vars(data: LinedMap, shown: str, folder: str) -> dict[str, Setting]:
    value = data.get("vars")
    if value is None:
        return {}
    if not isinstance(value, LinedMap):
        raise PlaybookError("a play's vars must be a mapping of name: value", at(shown, data, "vars"))
    settings = {}
    for name, item in value.items():
        where = at(shown, value, name)
        check_var_name(name, where)
        check_syntax(item, where)
        settings[name] = Setting(plain(item), f"{where} (play vars)", where, folder)
    check_known_vars(settings)
    return settings


def _check_handlers(play: Play) -> None:
    names: dict[str, str] = {}
    for handler in play.handlers:
        if handler.name in names:
            raise PlaybookError(f"two handlers are named '{handler.name}' (the other at {names[handler.name]})",
                                handler.where)
        names[handler.name] = handler.where
    for task in play.tasks + play.handlers:
        for name in task.notify:
            if name not in names:
                raise PlaybookError(f"task '{task.name}' notifies '{name}', but the play has no handler of that "
                                    f"name{did_you_mean(name, names)}", task.where)
