"""Which OpenSSH client config applies, and what it says about one address.

paramiko reads the file, with two changes (`_SafeSshConfig`):
- `Match exec "cmd"` runs `cmd` without a shell: the command is split into arguments first and the
  %-tokens are substituted inside single arguments, so no value (a host name from an inventory)
  can ever become shell syntax. A command that needs a shell (pipes, redirections, `;`, `$(...)`)
  is refused with a message saying to put it in a script. Each command runs at most once per
  config (with the same arguments) and for at most EXEC_TIMEOUT_S.
- ProxyCommand is returned as written: the transport expands its %-tokens itself, quoted.
paramiko's private hooks `_does_match` and `_tokenize` are what this overrides; pyproject pins
paramiko below 6 and tests/test_ssh_config_contract.py checks both still exist with these arguments.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from typing import Any

import paramiko

from tritonops.errors import InputError

ENV_VAR = "TRITONOPS_SSH_CONFIG"
EXEC_TIMEOUT_S = 10.0
_SHELL_SYNTAX = ("|", "&", ";", "<", ">", "`", "$(", "${")


def ssh_config_path(explicit: str | None) -> str | None:
    """The explicit file, else $TRITONOPS_SSH_CONFIG, else ~/.ssh/config if it exists, else none."""
    if explicit is not None:
        return explicit
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return from_env
    default = os.path.expanduser("~/.ssh/config")
    return default if os.path.isfile(default) else None


def load_ssh_config(explicit: str | None) -> tuple[paramiko.SSHConfig | None, str | None]:
    """The parsed config and its path (None, None when there is none to read)."""
    path = ssh_config_path(explicit)
    if path is None or path == os.devnull:
        return None, path
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise InputError("SSH config file not found (given explicitly or by $TRITONOPS_SSH_CONFIG)", path) from None
    if not stat.S_ISREG(mode):
        raise InputError("SSH config is not a regular file", path)
    try:
        with open(path, encoding="utf-8") as handle:
            config = _SafeSshConfig(path)
            config.parse(handle)
        return config, path
    except Exception as err:  # paramiko raises a variety of types for a bad file
        raise InputError(f"cannot read SSH config: {err}", path) from None


def lookup(config: paramiko.SSHConfig | None, address: str, path: str | None) -> dict[str, Any]:
    if config is None:
        return {}
    try:
        return dict(config.lookup(address))
    except InputError:
        raise
    except Exception as err:
        raise InputError(f"SSH config lookup for {address!r} failed: {err}", path) from None


class _SafeSshConfig(paramiko.SSHConfig):
    def __init__(self, path: str):
        super().__init__()
        self._path = path
        self._exec_results: dict[tuple[str, ...], bool] = {}

    def _tokenize(self, config, target_hostname, key, value):
        if key == "proxycommand":
            return value  # expanded, with quoting, by tritonops.transport
        return super()._tokenize(config, target_hostname, key, value)

    def _does_match(self, match_list, target_hostname, canonical, final, options):
        execs = [candidate for candidate in match_list if candidate["type"] == "exec"]
        if not execs:
            return super()._does_match(match_list, target_hostname, canonical, final, options)
        others = [candidate for candidate in match_list if candidate["type"] != "exec"]
        matched = super()._does_match(others, target_hostname, canonical, final, options) if others else []
        if others and not matched:
            return matched  # the other criteria failed: no command needs to run
        for candidate in execs:
            if self._should_fail(self._run_exec(candidate["param"], options, target_hostname), candidate):
                return False
        return list(matched) + execs

    def _run_exec(self, command: str, options: dict, target_hostname: str) -> bool:
        where = f"{self._path} (Match exec {command!r})"
        try:
            words = shlex.split(command)
        except ValueError as err:
            raise InputError(f"cannot split the command: {err}", where) from None
        if not words or any(mark in word for word in words for mark in _SHELL_SYNTAX):
            raise InputError("tritonops runs Match exec commands without a shell, and this one needs one "
                             "(pipes, redirections, ';', '&', '$(...)'): put it in a script and name the script",
                             where)
        argv = tuple(self._tokenize(options, target_hostname, "match-exec", word) for word in words)
        if argv not in self._exec_results:
            try:
                done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, timeout=EXEC_TIMEOUT_S, check=False)
                self._exec_results[argv] = done.returncode == 0
            except OSError:
                self._exec_results[argv] = False  # like OpenSSH: a command that cannot run does not match
            except subprocess.TimeoutExpired:
                raise InputError(f"the command did not finish within {EXEC_TIMEOUT_S:g}s", where) from None
        return self._exec_results[argv]
