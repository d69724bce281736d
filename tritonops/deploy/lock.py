"""The host lock: one run that writes at a time on a deployment (`<root>/lock`, owner inside).

A second run is refused naming the owner (who, from where, which command, since when). A lock older
than `stale_after_s` is taken over (the holder is gone: a killed run), so is one left by a run of this
controller whose process is gone (it lost the host before it could unlock), and `--break-lock` takes
it over at any age. Only the holder's token removes it. Taken with O_EXCL on the host, so two
controllers racing for the same host cannot both win.

`read_lock` is what `tritonops lock status` shows (`parse_lock_state` its pure parser); `owner_named` decides
whether `lock release --force OWNER` names the holder, and `release_held` then removes it by the holder's token.
"""

from __future__ import annotations

import getpass
import json
import os
import posixpath
import shlex
import socket
import time
import uuid
from dataclasses import dataclass, replace

from tritonops.errors import HostError, TritonopsError
from tritonops.operations import host_program
from tritonops.text import printable
from tritonops.transport.base import Transport

LOCK_FILE = "lock"
DEFAULT_STALE_AFTER_S = 6 * 3600.0


@dataclass(frozen=True)
class LockOwner:
    token: str
    user: str
    controller: str
    pid: int
    command: str
    since: str  # UTC, ISO 8601

    @classmethod
    def here(cls, command: str, clock=time.time) -> "LockOwner":
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))
        return cls(uuid.uuid4().hex, getpass.getuser(), socket.gethostname(), os.getpid(), command, since)

    def to_json(self) -> str:
        return json.dumps(vars(self))


@dataclass(frozen=True)
class LockOutcome:
    acquired: bool
    held_by: str = ""    # the other owner, described (refused, or broken)
    age_s: float = 0.0
    held_text: str = ""  # the lock file's text as found


def describe_owner(text: str) -> str:
    """'alice@ctl (pid 42, deploy since 2026-12-01T08:00:00Z)' from a lock file's text, whatever it holds."""
    try:
        owner = json.loads(text)
        return (f"{owner['user']}@{owner['controller']} (pid {owner['pid']}, {owner['command']} "
                f"since {owner['since']})")
    except (ValueError, KeyError, TypeError):
        return repr(text[:80])


def acquire(transport: Transport, root: str, owner: LockOwner, *, stale_after_s: float = DEFAULT_STALE_AFTER_S,
            break_lock: bool = False) -> LockOutcome:
    """Take the lock; a lock left by a run of this same controller whose process is gone (a run that
    lost the host before it could unlock) is taken over, as a stale one is."""
    outcome = _acquire(transport, root, owner, stale_after_s, break_lock)
    if not outcome.acquired and not break_lock and _gone_from_here(outcome.held_text):
        outcome = _acquire(transport, root, owner, stale_after_s, True)
    return outcome


def _gone_from_here(text: str) -> bool:
    try:
        held = json.loads(text)
        if held["controller"] != socket.gethostname():
            return False
        os.kill(int(held["pid"]), 0)
    except ProcessLookupError:
        return True
    except (ValueError, KeyError, TypeError, PermissionError, OverflowError):
        return False
    return False


def _acquire(transport: Transport, root: str, owner: LockOwner, stale_after_s: float,
             break_lock: bool) -> LockOutcome:
    path = posixpath.join(root, LOCK_FILE)
    argv = host_program.argv("lock", path, f"{stale_after_s:g}", "1" if break_lock else "0")
    result = transport.run(shlex.join(argv), stdin=owner.to_json().encode(), timeout=60)
    if not result.ok:
        raise HostError(transport.name, f"cannot take the lock {path}: {result.tail(2)}")
    answer = json.loads(result.stdout)
    text = answer["owner"] if "owner" in answer else answer.get("broke", "")
    return LockOutcome(bool(answer["acquired"]), describe_owner(text) if ("owner" in answer or "broke" in answer) else "",
                       float(answer.get("age_s", 0.0)), text)


def release(transport: Transport, root: str, owner: LockOwner) -> None:
    argv = host_program.argv("unlock", posixpath.join(root, LOCK_FILE), owner.token)
    transport.run(shlex.join(argv), timeout=60)


@dataclass(frozen=True)
class LockState:
    """A host's lock as `lock status` shows it: free, or held by user@controller (its run's pid and command, since
    when, the lock id: the token in the lock file, which `--force` takes too). A file tritonops did not write is
    held with no holder; its text is kept."""

    held: bool
    holder: str = ""                 # user@controller; '' when free or not a tritonops lock
    lock_id: str = ""                # the owner's token
    pid: int | None = None
    command: str = ""
    since: str = ""                  # UTC, ISO 8601, as the owner wrote it
    age_s: float = 0.0               # since the file was written
    stale: bool = False              # older than DEFAULT_STALE_AFTER_S: the next deploy takes it over
    gone: bool = False               # its run was on this controller and its process is gone: taken over too
    text: str = ""                   # the file's text, when it is not a tritonops lock


def parse_owner(text: str) -> LockOwner | None:
    """The LockOwner a lock file's text holds; None when it is not one tritonops wrote."""
    try:
        held = json.loads(text)
    except ValueError:
        return None
    fields = ("token", "user", "controller", "pid", "command", "since")
    if not isinstance(held, dict) or set(held) != set(fields):
        return None
    if not all(isinstance(held[key], str) and held[key] for key in fields if key != "pid") \
            or not isinstance(held["pid"], int) or isinstance(held["pid"], bool):
        return None
    return LockOwner(**{key: held[key] for key in fields})


def parse_lock_state(stdout: str, stale_after_s: float = DEFAULT_STALE_AFTER_S) -> LockState:
    """The `held` action's answer -> LockState (`gone` left False: that is the controller's own look). Pure."""
    try:
        answer = json.loads(stdout)
        if not answer["held"]:
            return LockState(False)
        text, age = str(answer["owner"]), max(0.0, float(answer["age_s"]))
    except (ValueError, KeyError, TypeError) as err:
        raise TritonopsError(f"cannot read the lock: {printable(str(err))}") from None
    owner = parse_owner(text)
    if owner is None:
        return LockState(True, age_s=age, stale=age > stale_after_s, text=text)
    return LockState(True, f"{owner.user}@{owner.controller}", owner.token, owner.pid, owner.command, owner.since,
                     age, age > stale_after_s)


def read_lock(transport: Transport, root: str) -> LockState:
    path = posixpath.join(root, LOCK_FILE)
    result = transport.run(shlex.join(host_program.argv("held", path)), timeout=60)
    if not result.ok:
        raise HostError(transport.name, f"cannot read the lock {path}: {result.tail(2)}")
    state = parse_lock_state(result.stdout)
    if not state.lock_id:
        return state
    # a run of this controller whose process is gone: the next deploy from here takes its lock over
    return replace(state, gone=_gone_from_here(json.loads(result.stdout)["owner"]))


def owner_named(state: LockState, named: str) -> bool:
    """Whether `named` (user@controller, or the lock id) is the holder of a held tritonops lock."""
    return bool(state.lock_id) and named in (state.holder, state.lock_id)


def release_held(transport: Transport, root: str, state: LockState) -> bool:
    """Remove the lock `state` found, by its holder's token: False when it changed hands since (nothing removed)."""
    if not state.lock_id:
        return False
    path = posixpath.join(root, LOCK_FILE)
    result = transport.run(shlex.join(host_program.argv("unlock", path, state.lock_id)), timeout=60)
    if not result.ok:
        raise HostError(transport.name, f"cannot release the lock {path}: {result.tail(2)}")
    try:
        return json.loads(result.stdout)["released"] is True
    except (ValueError, KeyError, TypeError):
        return False


def refusal(host: str, outcome: LockOutcome) -> str:
    minutes = outcome.age_s / 60
    return (f"locked by {outcome.held_by}, {minutes:.0f} min ago: another run is deploying to {host}; "
            f"wait for it, or pass --break-lock if it is gone")
