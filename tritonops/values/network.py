"""Network values a Ray cluster's members are given (issue #28), checked where they are read: the address the
other members reach a node at, and the interfaces NCCL and Gloo may use."""

from __future__ import annotations

import ipaddress
import re

from tritonops.errors import InputError

# a Linux interface name (at most 15 characters), with NCCL's '^' (exclude) and '=' (exact) prefixes
_IFNAME = re.compile(r"\^?=?[A-Za-z0-9_.:-]{1,15}")


def node_address(value: object, where: str | None) -> str:
    """A literal IPv4 or IPv6 address ('[...]' accepted) the other hosts reach the node at: Ray's node IP and
    VLLM_HOST_IP. A name would be resolved differently on each host; loopback and 0.0.0.0 reach nobody else."""
    text = value.strip().strip("[]") if isinstance(value, str) else ""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise InputError(f"{value!r} is not an IP address (a cluster node's address must be one: a name would be "
                         "resolved differently on each host)", where) from None
    if address.is_unspecified or address.is_multicast or address.is_loopback:
        raise InputError(f"{address} cannot be a cluster node's address (the other hosts cannot reach it there)",
                         where)
    return str(address)


def interface_names(value: object, where: str | None) -> str:
    """An NCCL/Gloo interface list ('eth0', 'ens1f0,ens1f1', '^lo,docker0', '=eth0')."""
    text = value if isinstance(value, str) else ""
    parts = text.split(",")
    if not (text and all(_IFNAME.fullmatch(p) and (i == 0 or p[0] not in "^=") for i, p in enumerate(parts))):
        raise InputError(f"{value!r} is not a network interface list (names of up to 15 letters, digits, '.', "
                         "'_', '-', ':' separated by ',', optionally starting with '^' or '=')", where)
    return text
