"""The SSH command-line options tritonops honours in ansible_ssh_common_args / ansible_ssh_extra_args.

Understood: -o ProxyCommand=, -o ProxyJump=, -J, -o UserKnownHostsFile=, -o StrictHostKeyChecking=
(yes | accept-new; 'no' is refused: tritonops never turns host-key checks off), -o ConnectTimeout=,
-o Port= / -p, -o User= / -l, -o IdentityFile= / -i. Every other option is ignored. As in OpenSSH,
the first value given for an option wins (and the first of ProxyCommand / ProxyJump).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache

from tritonops.errors import InputError
from tritonops.values.numbers import real_number
from tritonops.values.ssh_target import ssh_port, ssh_user

MAX_TIMEOUT_S = 3600.0  # a connect timeout longer than an hour is a mistake, not a wish

_FLAGS_WITH_ARGUMENT = set("BbcDEeFIiJLlmOopQRSWw")
_OPTION_SPLIT = re.compile(r"\s*=\s*|\s+")


@dataclass
class SshOptions:
    port: int | None = None
    user: str | None = None
    key_files: list[str] = field(default_factory=list)
    proxy_command: str | None = None
    proxy_jump: str | None = None
    known_hosts_file: str | None = None
    strict_host_key_checking: str | None = None
    connect_timeout_s: float | None = None
    where: str | None = None  # the setting these options were read from

    def first(self, attribute: str, value) -> None:
        if getattr(self, attribute) is None:
            setattr(self, attribute, value)


@lru_cache(maxsize=256)
def _words(text: str) -> tuple[str, ...]:
    """shlex's split, once per text: a group's ssh args are read again for each of its hosts (64 hosts:
    ~10 ms of a probe's start)."""
    return tuple(shlex.split(text))


def parse_ssh_args(text: str, where: str, options: SshOptions | None = None) -> SshOptions:
    """Read one ssh argument string into `options` (new if None); values already set are kept."""
    options = options or SshOptions(where=where)
    try:
        tokens = _words(str(text))
    except ValueError as err:
        raise InputError(f"cannot split SSH arguments {text!r}: {err}", where) from None
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if len(token) < 2 or token[0] != "-" or token[1] not in _FLAGS_WITH_ARGUMENT:
            continue  # a flag without argument (-4, -C, -A) or something we do not read
        flag, argument = token[1], token[2:]
        if not argument:
            if index >= len(tokens):
                raise InputError(f"SSH option -{flag} needs a value", where)
            argument = tokens[index]
            index += 1
        if flag == "o":
            _apply_option(argument, options, where)
        elif flag in "Jpli":
            _apply_option({"J": "ProxyJump", "p": "Port", "l": "User", "i": "IdentityFile"}[flag] + "=" + argument,
                          options, where)
    return options


def _apply_option(text: str, options: SshOptions, where: str) -> None:
    parts = _OPTION_SPLIT.split(text.strip(), maxsplit=1)
    if len(parts) != 2 or not parts[1]:
        raise InputError(f"SSH option -o {text!r} needs a value (Key=Value)", where)
    key, value = parts[0].lower(), parts[1]
    if key in ("proxycommand", "proxyjump"):
        if options.proxy_command is None and options.proxy_jump is None:  # the first of the two wins
            setattr(options, "proxy_command" if key == "proxycommand" else "proxy_jump", value)
    elif key == "userknownhostsfile":
        options.first("known_hosts_file", value.split()[0])
    elif key == "identityfile":
        options.key_files.append(value)
    elif key == "user":
        options.first("user", ssh_user(value, where))
    elif key == "port":
        options.first("port", ssh_port(value, where))
    elif key == "connecttimeout":
        options.first("connect_timeout_s", parse_timeout(value, where))
    elif key == "stricthostkeychecking":
        options.first("strict_host_key_checking", parse_strict_host_key_checking(value, where))


def parse_strict_host_key_checking(value: str, where: str) -> str:
    value = str(value).lower()
    if value in ("no", "off", "false"):
        raise InputError("StrictHostKeyChecking=no is refused: tritonops never disables host-key checks; "
                         "use accept-new to trust a host on first contact", where)
    if value in ("yes", "true", "ask"):
        return "yes"  # nobody can answer 'ask' in an unattended run: treat it as strict
    if value == "accept-new":
        return value
    raise InputError(f"StrictHostKeyChecking must be yes or accept-new, not {value!r}", where)


def parse_timeout(value, where: str) -> float:
    return real_number(value, "a timeout (seconds)", where, minimum=0.0, maximum=MAX_TIMEOUT_S)
