"""paramiko's SSHConfig made safe to read: `Match exec` without a shell, ProxyCommand left as written.

- `Match exec "cmd"` runs `cmd` without a shell: the command is split into arguments first and the
  %-tokens are substituted inside single arguments, so no value (a host name from an inventory)
  can ever become shell syntax. A command that needs a shell (pipes, redirections, `;`, `$(...)`)
  is refused with a message saying to put it in a script. Each command runs at most once per
  config (with the same arguments) and for at most EXEC_TIMEOUT_S.
- ProxyCommand is returned as written: the transport expands its %-tokens itself, quoted.
paramiko's private hooks `_does_match` and `_tokenize` are what this overrides; pyproject pins
paramiko below 6 and tests/unit/inventory/test_ssh_config_contract.py checks both still exist with these arguments.

Its own module because importing paramiko costs a fifth of a second: `ssh_config` loads it only when
there is a config file to read.
"""

from __future__ import annotations

import shlex
import subprocess

from tritonops.transport.paramiko_lib import paramiko

from tritonops.errors import InputError

EXEC_TIMEOUT_S = 10.0
_SHELL_SYNTAX = ("|", "&", ";", "<", ">", "`", "$(", "${")


class SafeSshConfig(paramiko.SSHConfig):
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
