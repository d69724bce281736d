"""What an inert connection value is, said independently of tritonops.values.ssh_target (whose
regular expressions the fuzzers are checking): the oracle the inventory fuzzers compare against.

A value handed to SSH (an address, a user, a ProxyJump hop) is inert when no program it is later
given to can read it as anything but one name: no whitespace or control/format characters, no shell
syntax, no leading '-' (an option), no '=' (an -o Key=Value), no ',' (a second ProxyJump hop), no '@'
in an address (a second user), no '%' token outside an IPv6 zone, and not empty or over length."""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from tritonops.transport.spec import ConnectionSpec

SHELL = set(" \t\n\r\v\f'\"`$;&|<>(){}[]*?!~#\\=,")
MAX_ADDRESS = 253
MAX_USER = 64


def _inert_word(text: str, max_length: int) -> bool:
    return (0 < len(text) <= max_length and not text.startswith("-")
            and not any(char in SHELL or char.isspace() or unicodedata.category(char)[0] in "CZ" for char in text))


def inert_address(value: Any) -> bool:
    if not isinstance(value, str) or not _inert_word(value, MAX_ADDRESS) or "@" in value or "/" in value:
        return False
    return "%" not in value or ":" in value.partition("%")[0]  # fe80::1%eth0: an IPv6 zone


def inert_user(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # a numeric user id written unquoted
    return isinstance(value, str) and _inert_word(value, MAX_USER) and "%" not in value and "/" not in value


def port_number(value: Any) -> int | None:
    """The port a value plainly is (22 or "22"), else None."""
    if type(value) is int:
        return value if 1 <= value <= 65535 else None
    if isinstance(value, str) and value.isascii() and value.isdigit() and 1 <= int(value) <= 65535:
        return int(value)
    return None


def never_a_port(value: Any) -> bool:
    """What no reading of a port accepts: not a number at all, out of range, not finite, not whole."""
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict)):
        return True
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return True
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        return True
    return not 1 <= value <= 65535


def inert_hop(hop: str) -> bool:
    """[user@]host[:port] or [user@][ipv6]:port, each part inert."""
    user, at, rest = hop.rpartition("@")
    if at and not inert_user(user):
        return False
    if rest.startswith("["):
        host, _, port = rest[1:].partition("]")
        port = port[1:] if port else None
    elif rest.count(":") == 1:
        host, _, port = rest.partition(":")
    else:
        host, port = rest, None
    return inert_address(host) and (port is None or port_number(port) is not None)


def connection_problems(spec: ConnectionSpec) -> list[str]:
    """Everything in `spec` SSH would be handed that is not inert; [] for a safe connection."""
    problems = []
    if not (spec.local or inert_address(spec.host)):
        problems.append(f"address {spec.host!r}")
    if spec.user is not None and not inert_user(spec.user):
        problems.append(f"user {spec.user!r}")
    if spec.port is not None and port_number(spec.port) is None:
        problems.append(f"port {spec.port!r}")
    if spec.proxy_jump is not None and not all(inert_hop(hop) for hop in spec.proxy_jump.split(",")):
        problems.append(f"ProxyJump {spec.proxy_jump!r}")
    if spec.strict_host_key_checking not in ("yes", "accept-new"):
        problems.append(f"StrictHostKeyChecking {spec.strict_host_key_checking!r}")
    if not (type(spec.connect_timeout_s) is float and math.isfinite(spec.connect_timeout_s)
            and 0 < spec.connect_timeout_s <= 3600):
        problems.append(f"connect timeout {spec.connect_timeout_s!r}")
    if any(not isinstance(path, str) or "\x00" in path for path in spec.key_files):
        problems.append(f"key files {spec.key_files!r}")
    return problems
