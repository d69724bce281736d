"""What the reading commands share: their options, and one SessionPool over the selected hosts."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from tritonops.playbook.inputs import RunInputs
from tritonops.results import GroupResult
from tritonops.transport.sessions import Phase, SessionPool


@dataclass(frozen=True)
class ReadOptions:
    forks: int = 10
    accept_new_host_keys: bool = False


@contextmanager
def reading_pool(inputs: RunInputs, options: ReadOptions, balancers: bool = False) -> Iterator[SessionPool]:
    """Sessions to the hosts --limit selected (and its balancers, with `balancers`), each dialled once (a host
    that cannot be reached is that host's result, never the others')."""
    hosts = list(inputs.hosts) + (list(inputs.balancers) if balancers else [])
    with SessionPool([host.connection for host in hosts], forks=options.forks,
                     accept_new_host_keys=options.accept_new_host_keys) as pool:
        yield pool


def read_each(inputs: RunInputs, options: ReadOptions, phase: Phase, task: str) -> GroupResult:
    """`phase` on every selected host, one result each, in inventory order."""
    with reading_pool(inputs, options) as pool:
        return pool.run(phase, task=task)
