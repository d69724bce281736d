"""compile_playbook: everything checked and rendered for every host before any host is touched.

For each play: its hosts (its pattern, within --limit), each host's variables (variables.py), the
tasks --tags/--skip-tags keep, and for each task and host either "skipped" (its `when` is false) or
its arguments rendered and validated by the operation's Args, one set per loop item. Handlers are
compiled the same way, for every host, since any of them may be notified. Any mistake is a
PlaybookError at its file:line naming the host; the run then never starts.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from tritonops.errors import InputError
from tritonops.inventory.model import Inventory
from tritonops.operations.base import Args, Operation
from tritonops.playbook.keys import did_you_mean
from tritonops.playbook.known_operations import operation_named
from tritonops.playbook.lookups import Lookup
from tritonops.playbook.inputs import RunInputs
from tritonops.playbook.model import Play, Playbook, PlaybookError, Task
from tritonops.playbook.tags import should_run
from tritonops.playbook.templating import Scope, evaluate, render
from tritonops.playbook.variables import host_scope
from tritonops.transport.spec import ConnectionSpec


@dataclass(frozen=True)
class HostTask:
    """What one task does on one host: skipped (its `when` is false) or these arguments, per loop item."""

    skipped: bool = False
    args: tuple[Args, ...] = ()
    why: str = ""  # for a skipped task: the condition that was false


@dataclass(frozen=True)
class CompiledTask:
    task: Task
    operation: Operation
    hosts: dict[str, HostTask]


@dataclass(frozen=True)
class CompiledPlay:
    play: Play
    hosts: tuple[str, ...]  # inventory order
    tasks: tuple[CompiledTask, ...]
    handlers: dict[str, CompiledTask]  # by name, in the order they run


@dataclass(frozen=True)
class CompiledPlaybook:
    playbook: Playbook
    plays: tuple[CompiledPlay, ...]
    connections: tuple[ConnectionSpec, ...]  # every host some play works on, once: for the SessionPool
    warnings: tuple[str, ...] = field(default=())


def compile_playbook(inputs: RunInputs, *, host_facts: Mapping[str, Mapping[str, Any]] | None = None,
                     tags: Collection[str] = ("all",), skip_tags: Collection[str] = (),
                     only_hosts: Collection[str] | None = None, start_at_task: str | None = None
                     ) -> CompiledPlaybook:
    """`inputs`: the run's playbook, inventory and --limit, read once (playbook/inputs.py).
    `host_facts`: per host, variables tritonops found or planned (probe facts, sizing), visible to
    templates like Ansible facts (above inventory vars, below play vars). `only_hosts`: the hosts
    still in the run (a caller's earlier phases dropped the others), by name, within --limit. `start_at_task`
    (--start-at-task): the tasks before the first whose name it matches (a glob, against `name` or
    `role : name`) are left out, as ansible-playbook does; one that matches no task is an error."""
    extra_vars = dict(inputs.extra_vars)
    host_facts = host_facts or {}
    limited = set(inputs.names)
    if only_hosts is not None:
        limited &= set(only_hosts)
    playbook = inputs.playbook
    plays = []
    first = _first_task(playbook, start_at_task) if start_at_task else None
    started = first is None
    for play in playbook.plays:
        inventory = inputs.play_inventory(play)
        hosts = [host for host in select_play_hosts(inventory, play) if host.name in limited]
        scopes = {host.name: host_scope(host, play, inventory, facts=host_facts.get(host.name, {}),
                                         extra_vars=extra_vars, playbook_path=playbook.path) for host in hosts}
        kept = []
        for task in play.tasks:
            started = started or task is first
            if started and should_run(task.tags, tags, skip_tags):
                kept.append(task)
        tasks = tuple(_compile_task(task, scopes) for task in kept)
        handlers = {handler.name: _compile_task(handler, scopes) for handler in play.handlers}
        plays.append(CompiledPlay(play, tuple(scopes), tasks, handlers))
    used = {name for compiled in plays for name in compiled.hosts}
    connections = tuple(host.connection for host in inputs.inventory.hosts if host.name in used)
    return CompiledPlaybook(playbook, tuple(plays), connections, _tag_warnings(playbook, tags, skip_tags))


def _first_task(playbook: Playbook, pattern: str):
    """The first task --start-at-task names: its name or `role : name` matches the glob."""
    for play in playbook.plays:
        for task in play.tasks:
            names = (task.name, f"{task.role} : {task.name}") if task.role else (task.name,)
            if any(fnmatch.fnmatchcase(name, pattern) for name in names):
                return task
    raise InputError(f"no task of {playbook.path} is named {pattern!r}", "--start-at-task")


def select_play_hosts(inventory: Inventory, play: Play):
    """The hosts the play's `hosts:` pattern selects; a bad pattern is an error at that line."""
    try:
        return inventory.select(play.hosts)
    except PlaybookError:
        raise
    except InputError as err:
        raise PlaybookError(f"hosts: {err.what}", play.hosts_where) from None


def _compile_task(task: Task, scopes: Mapping[str, Scope]) -> CompiledTask:
    operation = operation_named(task.operation, task.where)
    compiled = {}
    for host, scope in scopes.items():
        try:
            compiled[host] = _host_task(task, operation, scope)
        except PlaybookError as err:
            raise PlaybookError(f"{err.what} (task '{task.name}', host {host})", err.where) from None
    return CompiledTask(task, operation, compiled)


def _host_task(task: Task, operation: Operation, scope: Scope) -> HostTask:
    for condition in task.when:
        if not evaluate(condition, scope, task.line_of("when")):
            return HostTask(skipped=True, why=f"when: {condition}")
    items = [None] if task.loop is None else _loop_items(task, scope)
    args = []
    for item in items:
        lookup = Lookup(task, task.where)
        item_scope = scope.child({"lookup": lookup} | ({} if task.loop is None else {"item": item}), task.where)
        lookup.scope = item_scope
        rendered = {name: render(value, item_scope, task.arg_lines.get(name, task.where))
                    for name, value in task.args.items()}
        # what an operation may ask while its arguments are checked: a role's file or rendered template
        # (copy's and template's src), an expression's value (debug's var)
        source = Lookup(task, task.arg_lines.get("src", task.where))  # a missing file is blamed on src's line
        source.scope = item_scope
        context = {"lookup": source, "evaluate": lambda expression, scope=item_scope:
                   evaluate(expression, scope, task.arg_lines.get("var", task.line_of(task.operation)))}
        args.append(_validated(task, operation, rendered, context))
    return HostTask(args=tuple(args))


def _loop_items(task: Task, scope: Scope) -> list:
    where = task.line_of("loop")
    items = render(task.loop, scope, where)
    if not isinstance(items, list):
        raise PlaybookError(f"'loop' must give a list, it gave {type(items).__name__} {items!r:.60}", where)
    return items


def _validated(task: Task, operation: Operation, rendered: dict[str, Any], context: dict[str, Any]) -> Args:
    try:
        return operation.Args.model_validate(rendered, context=context)
    except ValidationError as err:
        # a misspelt argument also shows as a missing one: name the misspelling, at its line
        problem = sorted(err.errors(), key=lambda error: error["type"] != "extra_forbidden")[0]
        name = str(problem["loc"][0]) if problem["loc"] else ""
        where = task.arg_lines.get(name, task.line_of(task.operation))
        known = list(operation.Args.model_fields)
        if problem["type"] == "missing":
            raise PlaybookError(f"'{task.operation}' needs the argument '{name}'", where) from None
        if problem["type"] == "extra_forbidden":
            raise PlaybookError(f"'{task.operation}' has no argument '{name}'{did_you_mean(name, known)}",
                                where) from None
        path = ".".join(str(part) for part in problem["loc"])
        said = problem["msg"].removeprefix("Value error, ")
        if not path:  # the arguments together (one of two, not both): no one value to show
            raise PlaybookError(f"'{task.operation}': {said}", where) from None
        shown = repr(problem.get("input"))
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise PlaybookError(f"'{task.operation}' argument '{path}': {said} (got {shown})", where) from None


def _tag_warnings(playbook: Playbook, tags: Collection[str], skip_tags: Collection[str]) -> tuple[str, ...]:
    special = {"all", "always", "never", "tagged", "untagged"}
    known = {tag for play in playbook.plays for task in play.tasks for tag in task.tags}
    return tuple(f"--{option} {tag}: no task has that tag{did_you_mean(tag, known) if known else ''}"
                 for option, given in (("tags", tags), ("skip-tags", skip_tags))
                 for tag in given if tag not in special and tag not in known)
