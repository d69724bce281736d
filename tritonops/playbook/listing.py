"""What ansible-playbook's --list-hosts, --list-tasks and --syntax-check show, from a run's inputs: each play's
hosts (its pattern, within --limit) and the tasks --tags / --skip-tags leave, with their tags. Pure: no host is
contacted, nothing is probed or planned."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from tritonops.playbook.compile import select_play_hosts
from tritonops.playbook.inputs import RunInputs
from tritonops.playbook.known_operations import operation_named
from tritonops.playbook.tags import should_run


@dataclass(frozen=True)
class TaskListing:
    name: str
    role: str | None
    tags: tuple[str, ...]
    where: str


@dataclass(frozen=True)
class PlayListing:
    number: int                      # from 1, as ansible-playbook counts them
    name: str
    pattern: str                     # the play's hosts:
    hosts: tuple[str, ...]           # what it selects within --limit, in inventory order
    tasks: tuple[TaskListing, ...]   # what --tags / --skip-tags leave, in order


def list_plays(inputs: RunInputs, tags: Collection[str] = ("all",),
               skip_tags: Collection[str] = ()) -> tuple[PlayListing, ...]:
    """Every play as the run would see it. Also the syntax check: a task naming an unknown operation or a
    play whose hosts: is not a pattern raises PlaybookError with its file:line, as the run would."""
    limited = set(inputs.names)
    plays = []
    for number, play in enumerate(inputs.playbook.plays, 1):
        for task in (*play.tasks, *play.handlers):
            operation_named(task.operation, task.where)
        hosts = tuple(host.name for host in select_play_hosts(inputs.play_inventory(play), play) if host.name in limited)
        tasks = tuple(TaskListing(task.name, task.role, tuple(sorted(task.tags)), task.where)
                      for task in play.tasks if should_run(task.tags, tags, skip_tags))
        plays.append(PlayListing(number, play.name, play.hosts, hosts, tasks))
    return tuple(plays)
