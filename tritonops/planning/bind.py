"""Where a serving host's replicas bind their HTTP, gRPC and metrics ports (issue #31): behind a balancer, the
host's private address, so the balancer is the only public door.

- `tritonops_bind_address` set: that address (an IP address; `0.0.0.0` or `::` included: the user's choice wins);
- else, when the inventory has balancers (`tritonops_balancers`): the address the balancers reach the host at,
  `tritonops_replica_address` (an IP address), else `ansible_host` when it is a private or loopback IP address;
  none of these: an InputError naming the host and the variables to set;
- else `0.0.0.0`, as before balancers.

Everything on the host that calls a replica (the rollout's gate, `status`, `metrics`, the lab helpers)
reaches it at `local_address(bind)`: loopback for a wildcard bind, else the bound address itself.

Pure: no I/O; a bad value is an InputError naming the variable and where it was set.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from tritonops.errors import InputError
from tritonops.planning.entries import host_where

BIND_VAR = "tritonops_bind_address"
ADDRESS_VAR = "tritonops_replica_address"
WILDCARD = "0.0.0.0"
WILDCARDS = ("0.0.0.0", "::")


def _given(host, name: str) -> Any:
    value = host.vars.get(name)
    return None if value is None or value == "" else value


def _ip(value: Any, name: str, where: str | None) -> str:
    try:
        return str(ipaddress.ip_address(str(value).strip("[]")))
    except ValueError:
        raise InputError(f"{name} {value!r} is not an IP address", where) from None


def given_bind(host) -> str | None:
    """The host's `tritonops_bind_address`, checked as an IP address (None: not set)."""
    given = _given(host, BIND_VAR)
    return None if given is None else _ip(given, BIND_VAR, host_where(host, BIND_VAR))


def private_connection(host) -> tuple[str | None, str]:
    """(the host's `ansible_host` when it is a private or loopback IP address, else None; what was seen of it, for
    the error that names what to set instead)."""
    connection = _given(host, "ansible_host")
    try:
        ip = ipaddress.ip_address(str(connection)) if connection is not None else None
    except ValueError:
        ip = None
    if ip is not None and (ip.is_private or ip.is_loopback):
        return str(ip), ""
    return None, (f"ansible_host {connection} is not a private or loopback IP address" if connection is not None
                  else "it has no ansible_host")


def replica_bind(host, behind_balancer: bool) -> str:
    """The address `host`'s replicas bind their ports to (module docstring); `behind_balancer`: the inventory has
    hosts in `tritonops_balancers`."""
    given = given_bind(host)
    if given is not None:
        return given
    if not behind_balancer:
        return WILDCARD
    reached = _given(host, ADDRESS_VAR)
    if reached is not None:
        try:
            return str(ipaddress.ip_address(str(reached)))
        except ValueError:
            raise InputError(f"{host.name}: {ADDRESS_VAR} {reached!r} is a name, not an IP address its replicas can "
                             f"bind to behind the balancer: set {BIND_VAR} to the host's private IP address",
                             host_where(host, ADDRESS_VAR)) from None
    private, seen = private_connection(host)
    if private is not None:
        return private
    raise InputError(f"{host.name}: no private address to bind its replicas to behind the balancer ({seen}): set "
                     f"{ADDRESS_VAR} (the private IP the balancers reach it at) or {BIND_VAR} "
                     f"({WILDCARD} to stay public)", host_where(host, "ansible_host"))


def local_address(bind: str) -> str:
    """Where a replica bound to `bind` answers on the host itself: 127.0.0.1 for a wildcard (as the gate always
    called it; metrics.fetch.local_address says the same), else `bind`."""
    return "127.0.0.1" if bind in ("", *WILDCARDS) else bind


def serving_address(recorded: str | None, planned: str) -> str:
    """Where a release's replicas answer on the host (local_address): at the bind its release.json recorded
    (`serve.bind`, what the replicas were started with), else, for a release made before it was recorded, at the
    bind the variables give now (`planned`: replica_bind)."""
    return local_address(recorded or planned)
