"""Which TCP ports a host listens on, from the kernel's socket tables (/proc/net/tcp and /proc/net/tcp6, read as file
facts: no tool on the host). Pure: `parse_listeners` reads a table's text, `binds` says whether a listener takes a
port that a server binding `address` needs."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
LISTEN = "0A"


@dataclass(frozen=True)
class Listener:
    address: str   # the address it is bound to (0.0.0.0 or :: for every address)
    port: int


def parse_listeners(text: str) -> frozenset[Listener]:
    """The listening sockets of one table (its header line first; lines that are not a socket are skipped)."""
    found = set()
    for row in text.splitlines()[1:]:
        fields = row.split()
        if len(fields) < 4 or fields[3] != LISTEN or ":" not in fields[1]:
            continue
        address, port = fields[1].rsplit(":", 1)
        try:
            found.add(Listener(_address(address), int(port, 16)))
        except ValueError:
            continue
    return frozenset(found)


def _address(hexed: str) -> str:
    """The kernel's address: 4-byte words in host order (little-endian on every host tritonops runs on)."""
    raw = bytes.fromhex(hexed)
    if len(raw) not in (4, 16):
        raise ValueError(hexed)
    swapped = b"".join(raw[at:at + 4][::-1] for at in range(0, len(raw), 4))
    return str(ipaddress.ip_address(swapped))


def binds(listener: Listener, address: str, port: int) -> bool:
    """Whether `listener` holds `port` for a server that binds `address` (a wildcard meets every address)."""
    if listener.port != port:
        return False
    wildcard = ("0.0.0.0", "::")
    return listener.address in wildcard or address in wildcard or listener.address == address
