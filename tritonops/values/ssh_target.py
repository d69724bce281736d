"""Host names, addresses, users and ports: what tritonops will dial and pass to SSH.

Checked where they are read (inventory variables, ~/.ssh/config, command-line targets, ProxyJump
hops), like OpenSSH 9.6+ does for its command line: no whitespace, quotes, shell metacharacters,
control characters or leading '-', so a value can never become an option or a command, whichever
program it is later handed to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tritonops.errors import InputError
from tritonops.values.numbers import whole_number

MAX_HOST_LENGTH = 253  # DNS
MAX_USER_LENGTH = 64
_HOST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(%[A-Za-z0-9_.-]+)?")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@-]*")


def host_address(value: Any, where: str | None = None) -> str:
    """A DNS name, an IPv4 address or an IPv6 address (with an optional %zone)."""
    text = value if isinstance(value, str) else None
    if not text:
        raise InputError(f"a host address must be a non-empty name, not {_shown(value)}", where)
    if len(text) > MAX_HOST_LENGTH:
        raise InputError(f"host address {_shown(text)} is longer than {MAX_HOST_LENGTH} characters", where)
    if not _HOST.fullmatch(text):
        raise InputError(f"host address {_shown(text)} is not a host name or IP address (letters, digits, "
                         f"'.', '-', '_'; ':' for IPv6; no spaces, quotes, shell characters or leading '-')",
                         where)
    return text


def ssh_user(value: Any, where: str | None = None) -> str:
    text = value if isinstance(value, str) else (str(value) if isinstance(value, int) and
                                                 not isinstance(value, bool) else None)
    if not text:
        raise InputError(f"an SSH user must be a non-empty name, not {_shown(value)}", where)
    if len(text) > MAX_USER_LENGTH or not _USER.fullmatch(text):
        raise InputError(f"SSH user {_shown(text)} is not a user name (letters, digits, '.', '_', '-', '@'; "
                         f"at most {MAX_USER_LENGTH} characters, no leading '-')", where)
    return text


def ssh_port(value: Any, where: str | None = None) -> int:
    return whole_number(value, "port", where, minimum=1, maximum=65535)


@dataclass(frozen=True)
class Target:
    host: str
    user: str | None = None
    port: int | None = None


def parse_target(text: Any, where: str | None = None) -> Target:
    """[user@]host[:port] or [user@][ipv6]:port, each part checked: a CLI target or a ProxyJump hop."""
    if not isinstance(text, str) or not text:
        raise InputError(f"expected [user@]host[:port], not {_shown(text)}", where)
    user, at, rest = text.rpartition("@")
    port_text = None
    if rest.startswith("["):
        host, bracket, after = rest[1:].partition("]")
        if not bracket or (after and not after.startswith(":")):
            raise InputError(f"cannot read {_shown(text)}: expected [user@]host[:port] or [user@][ipv6]:port", where)
        port_text = after[1:] if after else None
    elif rest.count(":") == 1:
        host, _, port_text = rest.partition(":")
    else:
        host = rest  # a name, or a bare IPv6 address
    if at and not user:
        raise InputError(f"cannot read {_shown(text)}: nothing before '@'", where)
    return Target(host_address(host, where), ssh_user(user, where) if at else None,
                  ssh_port(port_text, where) if port_text is not None else None)


def _shown(value: Any) -> str:
    """repr() escapes control characters, so a hostile value cannot reach the terminal raw."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
