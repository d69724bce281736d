"""`tritonops lock status|release`: each host's deployment lock seen, and released by hand.

`lock status` reads the lock of every selected host (deploy/lock.py read_lock). `lock release --force OWNER`
removes a host's lock only when OWNER names its holder (user@controller, or the lock id `lock status` shows: the
token in the lock file), by that token, so a lock that changed hands in between stays; every host's outcome goes
into the audit log like a deploy's (deploy/event_log.py). The token is called the lock id where it is shown: a
field named `token` is masked in every output (redact.py), and this one is no secret (the file is readable by
anyone who may release it).
"""

from __future__ import annotations

import posixpath
import re
import time
from dataclasses import dataclass

from tritonops.deploy import lock as host_lock
from tritonops.deploy.event_log import audit_results
from tritonops.errors import InputError
from tritonops.planning.deployment import deployment_of
from tritonops.playbook.inputs import RunInputs
from tritonops.reading.sessions import ReadOptions, read_each
from tritonops.results import GroupResult, HostResult
from tritonops.text import printable
from tritonops.transport.sessions import HostSession

STATUS_TASK = "lock"
RELEASE_COMMAND = "lock release"
_OWNER = re.compile(r"\S+@\S+|[0-9a-f]{32}")


@dataclass(frozen=True)
class ReleaseLockOptions:
    owner: str                       # --force: user@controller or the lock id
    read: ReadOptions = ReadOptions()
    audit_log: object | None = None  # a Path; None: not written


def forced_owner(named: str) -> str:
    """--force's OWNER, checked: user@controller or a lock id (32 hex digits), as `lock status` shows them."""
    if not _OWNER.fullmatch(named or ""):
        raise InputError(f"OWNER must be user@controller or a lock id (32 hex digits, see `tritonops lock "
                         f"status`), not {printable(named)!r}", "--force")
    return named


def lock_status(inputs: RunInputs, options: ReadOptions) -> GroupResult:
    """One result per selected host: ok with its LockState (free or held)."""
    roots = _roots(_deployments(inputs))

    def phase(session: HostSession) -> HostResult[host_lock.LockState]:
        state = host_lock.read_lock(session.transport, roots[session.name])
        return HostResult(session.name, "ok", status_said(state), state, task=STATUS_TASK)

    return read_each(inputs, options, phase, STATUS_TASK)


def status_said(state: host_lock.LockState) -> str:
    if not state.held:
        return "free"
    if not state.lock_id:
        return f"held by a file tritonops did not write ({printable(state.text[:80])!r})"
    said = f"held by {owner_said(state)}"
    if state.stale or state.gone:
        said += "; stale: the next deploy takes it over" if state.stale else \
            "; its run is gone: the next deploy from this controller takes it over"
    return said


def owner_said(state: host_lock.LockState) -> str:
    """'alice@ctl (pid 42, deploy since 2026-12-01T08:00:00Z, 5 min ago), lock id …': who holds a lock."""
    return (f"{printable(state.holder)} (pid {state.pid}, {printable(state.command)} since {printable(state.since)}, "
            f"{state.age_s / 60:.0f} min ago), lock id {printable(state.lock_id)}")


def release_lock(inputs: RunInputs, options: ReleaseLockOptions, clock=time.time) -> GroupResult:
    """Per selected host: changed (released), ok (no lock), failed (held by someone else than OWNER, not a
    tritonops lock, or it changed hands meanwhile). Every result goes into the audit log."""
    named = forced_owner(options.owner)
    deployments = _deployments(inputs)
    roots = _roots(deployments)
    started = clock()

    def phase(session: HostSession) -> HostResult[host_lock.LockState]:
        root = roots[session.name]
        state = host_lock.read_lock(session.transport, root)
        kept = left_alone(state, named, posixpath.join(root, host_lock.LOCK_FILE))
        if kept is not None:
            return HostResult(session.name, *kept, state)
        if not host_lock.release_held(session.transport, root, state):
            return HostResult(session.name, "failed", "the lock changed hands before it was released: nothing "
                              "released (see `tritonops lock status`)", state)
        return HostResult(session.name, "changed", f"released the lock of {owner_said(state)}", state)

    results = read_each(inputs, options.read, phase, RELEASE_COMMAND)
    if options.audit_log is not None:
        audit_results(options.audit_log, results, deployments, command=RELEASE_COMMAND, started=started,
                      finished=clock())
    return results


def left_alone(state: host_lock.LockState, named: str, path: str) -> tuple[str, str] | None:
    """(status, message) when `lock release --force named` leaves the lock it found as it is; None: remove it.
    Pure."""
    if not state.held:
        return "ok", "not locked: nothing to release"
    if not state.lock_id:
        return "failed", (f"{path} is not a tritonops lock ({printable(state.text[:80])!r}): nothing released; "
                          "remove it by hand if no run holds it")
    if not host_lock.owner_named(state, named):
        return "failed", (f"locked by {printable(state.holder)} (lock id {printable(state.lock_id)}), not "
                          f"{printable(named)}: nothing released")
    return None


def _deployments(inputs: RunInputs) -> dict[str, tuple[str, str]]:
    """host -> (root, deployment), checked before any host is contacted."""
    return {host.name: deployment_of(host) for host in inputs.hosts}


def _roots(deployments: dict[str, tuple[str, str]]) -> dict[str, str]:
    """host -> its deployment folder (where the lock is)."""
    return {name: posixpath.join(*deployment) for name, deployment in deployments.items()}
