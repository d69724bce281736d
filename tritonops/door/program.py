"""The door program on a balancer host (host_programs/door_apply.py, `python3 -c`, stdlib only): what it is sent
and what its answer means. Pure: the deploy runs ARGV over SSH with `request(...)` on stdin and gives the exit
code, stdout and stderr to `read_answer`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources

from tritonops import host_programs
from tritonops.errors import TritonopsError, one_line
from tritonops.render.door_config import BalancerGlobals

PROGRAM = host_programs.source("door_apply")
ARGV = ("python3", "-c", PROGRAM)
CONFIG_DIR = "/etc/haproxy/tritonops"
# Lua scripts HAProxy loads, beside CONFIG_DIR (which is replaced whole on a change, and `haproxy -c` checks the
# next one before it is in place): each named for its content, never rewritten, so a configuration always loads
# the script it was checked with
SCRIPTS_DIR = "/etc/haproxy/tritonops-lua"
PIDFILE = "/run/haproxy-tritonops.pid"
REFUSED, NOT_RUNNING, NOT_INSTALLED = 3, 4, 5


@dataclass(frozen=True)
class Script:
    """A Lua script for HAProxy: its file name in SCRIPTS_DIR (its name and a digest of its text) and its text."""
    name: str
    text: str

    @property
    def path(self) -> str:
        return f"{SCRIPTS_DIR}/{self.name}"


def _script(stem: str) -> Script:
    text = resources.files("tritonops.door").joinpath(f"{stem}.lua").read_text(encoding="utf-8")
    return Script(f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.lua", text)


PREFIX_KEY = _script("prefix_key")  # the prefix key (render/door_config.py: PREFIX_KEY_FETCH)


class DoorRefused(TritonopsError):
    """haproxy -c refused the rendered files: the running balancer is untouched."""


@dataclass(frozen=True)
class KeysChanged:
    """What a rotation did to a keys file, by key id (`k:` + 12 hex digits of the key's SHA-256; never a key)."""
    file: str
    new: str | None             # the new key's id (None: retire, or a rotation in check mode)
    kept: tuple[str, ...]       # the old keys still open, newest first
    removed: tuple[str, ...]    # the keys that no longer open


@dataclass(frozen=True)
class DoorApplied:
    action: str                 # started | reloaded | unchanged | would reload (check mode)
    installed: bool             # haproxy was installed by this run
    keys_created: tuple[str, ...]  # keys files made on first use (their paths; never a key)
    version: str
    keys: KeysChanged | None = None  # a rotation's change (keys_request)

    @property
    def changed(self) -> bool:
        return self.action != "unchanged" or self.installed or bool(self.keys_created)


def request(files: Mapping[str, str], *, remove: Iterable[str] = (), keys_files: Iterable[str] = (),
            globals_: BalancerGlobals = BalancerGlobals(), install: bool = True,
            scripts: Iterable[Script] = ()) -> bytes:
    """The program's stdin: the files to hold in CONFIG_DIR beside the other deployments' ones, and the Lua scripts
    they load, in SCRIPTS_DIR."""
    body = {"dir": CONFIG_DIR, "files": dict(files), "remove": sorted(set(remove)), "pidfile": PIDFILE,
            "socket": globals_.stats_socket, "install": install, "keys_files": sorted(set(keys_files))}
    scripts = {script.name: script.text for script in scripts}
    if scripts:
        body.update(scripts_dir=SCRIPTS_DIR, scripts=scripts)
    return json.dumps(body).encode()


def keys_request(keys_file: str, action: str, *, keep_old: bool = False, check: bool = False,
                 globals_: BalancerGlobals = BalancerGlobals()) -> bytes:
    """The program's stdin for a key rotation (`action` rotate: a new key first, the old ones kept with
    `keep_old`; retire: only the newest kept) on a balancer whose door checks `keys_file`: the deployments' files
    stay as they are, haproxy reloads on the changed keys; `check`: what would change, nothing touched."""
    if action not in ("rotate", "retire"):
        raise ValueError(f"a keys action is rotate or retire, not {action!r}")
    return json.dumps({"dir": CONFIG_DIR, "files": {}, "remove": [], "pidfile": PIDFILE,
                       "socket": globals_.stats_socket, "install": False, "keys_files": [keys_file],
                       "keys": {"action": action, "file": keys_file, "keep_old": keep_old, "check": check}}).encode()


def read_answer(exit_code: int, stdout: str, stderr: str) -> DoorApplied:
    if exit_code == 0:
        try:
            data = json.loads(stdout)
            keys = data.get("keys")
            return DoorApplied(str(data["action"]), bool(data["installed"]), tuple(data["keys_created"]),
                               str(data.get("version") or "?"),
                               None if keys is None else KeysChanged(str(keys["file"]), keys["new"],
                                                                     tuple(keys["kept"]), tuple(keys["removed"])))
        except (ValueError, KeyError, TypeError) as err:
            raise TritonopsError(f"the balancer's door program answered what it never writes: {err}") from None
    why = one_line(stderr or stdout or f"exit code {exit_code}")
    if exit_code == REFUSED:
        raise DoorRefused(why)
    raise TritonopsError(why)
