"""Run one task on many hosts with bounded parallelism; every host gets a result.

A one-phase run over a `SessionPool` (sessions.py): a dead host becomes an `unreachable` result,
an exception in the task a `failed` one; neither stops nor hides the others. Commands with several
phases use the SessionPool directly so each host is dialled once.
"""

from __future__ import annotations

from typing import Callable, Sequence

from tritonops.results import GroupResult, HostResult
from tritonops.transport.base import Transport
from tritonops.transport.sessions import SessionPool, described, one_line, open_transport  # noqa: F401
from tritonops.transport.spec import ConnectionSpec

Task = Callable[[Transport, ConnectionSpec], HostResult]


def run_on_hosts(specs: Sequence[ConnectionSpec], task: Task, *, forks: int = 10,
                 accept_new_host_keys: bool = False, preload: Sequence[str] = ()) -> GroupResult:
    """`preload`: modules needed once hosts answer, loaded while they work (see SessionPool)."""
    with SessionPool(specs, forks=forks, accept_new_host_keys=accept_new_host_keys, preload=preload) as pool:
        return pool.run(lambda session: task(session.transport, session.spec))
