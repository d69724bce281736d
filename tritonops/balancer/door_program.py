"""The door program on a balancer host (host_programs/door_apply.py, `python3 -c`, stdlib only): what it is sent
and what its answer means. Pure: the deploy runs ARGV over SSH with `request(...)` on stdin and gives the exit
code, stdout and stderr to `read_answer`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tritonops import host_programs
from tritonops.errors import TritonopsError, one_line
from tritonops.render.haproxy_config import BalancerGlobals

PROGRAM = host_programs.source("door_apply")
ARGV = ("python3", "-c", PROGRAM)
CONFIG_DIR = "/etc/haproxy/tritonops"
PIDFILE = "/run/haproxy-tritonops.pid"
REFUSED, NOT_RUNNING, NOT_INSTALLED = 3, 4, 5


class DoorRefused(TritonopsError):
    """haproxy -c refused the rendered files: the running balancer is untouched."""


@dataclass(frozen=True)
class DoorApplied:
    action: str                 # started | reloaded | unchanged
    installed: bool             # haproxy was installed by this run
    keys_created: tuple[str, ...]  # keys files made on first use (their paths; never a key)
    version: str

    @property
    def changed(self) -> bool:
        return self.action != "unchanged" or self.installed or bool(self.keys_created)


def request(files: Mapping[str, str], *, remove: Iterable[str] = (), keys_files: Iterable[str] = (),
            globals_: BalancerGlobals = BalancerGlobals(), install: bool = True) -> bytes:
    """The program's stdin: the files to hold in CONFIG_DIR beside the other deployments' ones."""
    return json.dumps({"dir": CONFIG_DIR, "files": dict(files), "remove": sorted(set(remove)), "pidfile": PIDFILE,
                       "socket": globals_.stats_socket, "install": install,
                       "keys_files": sorted(set(keys_files))}).encode()


def read_answer(exit_code: int, stdout: str, stderr: str) -> DoorApplied:
    if exit_code == 0:
        try:
            data = json.loads(stdout)
            return DoorApplied(str(data["action"]), bool(data["installed"]), tuple(data["keys_created"]),
                               str(data.get("version") or "?"))
        except (ValueError, KeyError, TypeError) as err:
            raise TritonopsError(f"the balancer's door program answered what it never writes: {err}") from None
    why = one_line(stderr or stdout or f"exit code {exit_code}")
    if exit_code == REFUSED:
        raise DoorRefused(why)
    raise TritonopsError(why)
