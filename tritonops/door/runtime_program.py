"""The runtime program on a balancer host (host_programs/door_runtime.py, `python3 -c`, stdlib only):
its argument lists and what its answers mean. Pure: the deploy runs the argv over SSH and gives back
the exit code, stdout and stderr to `read_send` / `read_wait`.

Every line it sends is one that runtime.py built (names checked there); the program checks each line
again (no ';', no '\\', no control character) so a caller's mistake cannot become a second command.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from tritonops import host_programs
from tritonops.door.runtime import SOCKET, RuntimeApiError, RuntimeRefused, RuntimeUnreachable, checked_name
from tritonops.errors import InputError, one_line
from tritonops.host_programs.haproxy_answers import line_problem, refusal

PROGRAM = host_programs.source("door_runtime")
REFUSED = 65        # HAProxy refused a command, or has no such server
UNREACHABLE = 69    # no haproxy at the socket, or not allowed
MAX_WAIT_S = 86400  # what the program accepts


def _socket(path: str) -> str:
    if not path.startswith("/") or len(path) > 107 or any(not " " <= char <= "~" for char in path):
        raise InputError(f"stats socket {path!r}: an absolute path of printable ASCII, at most 107 bytes "
                         "(AF_UNIX)", "socket")
    return path


def send_argv(commands: Sequence[str], *, socket: str = SOCKET, python: str = "python3") -> tuple[str, ...]:
    """The program sending `commands` in order, one connection each, stopping at the first refused."""
    if isinstance(commands, str) or not commands:
        raise InputError("give the runtime program a list of one command or more", "commands")
    for command in commands:
        if why := line_problem(command):
            raise InputError(f"{why}: {command!r}", "command")
    return host_programs.argv("door_runtime", _socket(socket), "send", *commands, python=python)


def wait_drained_argv(backend: str, server: str, timeout_s: float, *, socket: str = SOCKET,
                      python: str = "python3") -> tuple[str, ...]:
    """The program polling `show stat` until the server has no session and no queue, or `timeout_s`.
    The socket is the current worker's: after a reload, sessions still held by the previous worker
    (master-worker mode keeps it until they end) are not in its counts."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 <= timeout_s <= MAX_WAIT_S:
        raise InputError(f"drain timeout {timeout_s!r}: seconds from 0 to {MAX_WAIT_S}", "timeout_s")
    return host_programs.argv("door_runtime", _socket(socket), "wait-drained", checked_name(backend, "backend"),
                              checked_name(server, "server"), f"{timeout_s:g}", python=python)


@dataclass(frozen=True)
class Answer:
    command: str
    text: str      # HAProxy's answer, whole (runtime.parse_stat / parse_servers_state read it)


@dataclass(frozen=True)
class DrainWait:
    drained: bool  # False: the deadline came first
    waited_s: float
    polls: int
    status: str    # the server's status at the last poll (DRAIN, MAINT, UP, ...)
    scur: int      # its sessions then
    qcur: int      # its queue then


def _failure(exit_code: int, stdout: str, stderr: str) -> RuntimeApiError:
    line = one_line(stderr.strip().splitlines()[-1] if stderr.strip() else f"exit code {exit_code}")
    if exit_code == UNREACHABLE:
        return RuntimeUnreachable(f"haproxy runtime API: {line}")
    if exit_code == REFUSED:
        try:
            last = json.loads(stdout)["answers"][-1]
        except (ValueError, KeyError, IndexError, TypeError):
            return RuntimeApiError(line)  # no answer came with it: no such server
        return RuntimeRefused(last["command"], refusal(last["command"], last["answer"]) or line)
    return RuntimeApiError(f"the haproxy runtime program failed: {line}")


def _json(stdout: str) -> dict:
    try:
        body = json.loads(stdout)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise RuntimeApiError(f"the haproxy runtime program answered no JSON object: {one_line(stdout[:200])!r}")
    return body


def read_send(exit_code: int, stdout: str, stderr: str) -> tuple[Answer, ...]:
    """The answers of a `send`, in order; the program's failure as a typed error."""
    if exit_code != 0:
        raise _failure(exit_code, stdout, stderr)
    return tuple(Answer(item["command"], item["answer"]) for item in _json(stdout).get("answers", ()))


def read_wait(exit_code: int, stdout: str, stderr: str) -> DrainWait:
    """What a `wait-drained` saw: drained, or the deadline with the sessions still there."""
    if exit_code != 0:
        raise _failure(exit_code, stdout, stderr)
    body = _json(stdout)
    try:
        return DrainWait(bool(body["drained"]), float(body["waited_s"]), int(body["polls"]), str(body["status"]),
                         int(body["scur"]), int(body["qcur"]))
    except (KeyError, TypeError, ValueError) as err:
        raise RuntimeApiError(f"the haproxy runtime program's wait answer lacks {err}") from None
