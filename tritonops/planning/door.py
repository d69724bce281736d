"""Each deployment's front door (issue #31): which replicas HAProxy balances and how, from the serving hosts'
current releases (their placement, never variables) and the balancer hosts' variables.

A balancer is a host of the inventory group `tritonops_balancers`. Its door settings are its variables:
`tritonops_door_http_port` / `tritonops_door_grpc_port` (default 8000 / 8001; grpc `off` for none),
`tritonops_queue_timeout_ms` (default 2000) and `tritonops_max_queue` (default 256), the circuit breaker;
`tritonops_longest_generation_s` (default 900), above which HAProxy gives up on a replica's answer;
`tritonops_drain_timeout_s` (default 120), how long a rolling deploy lets a drained replica finish its requests;
`tritonops_api_keys_file` and `tritonops_tls_pem`, paths on the balancer; `tritonops_door_routing` (`leastconn`, the
default, or `prefix`: by a hash of the prompt's first `tritonops_door_prefix_bytes` (default 1024), bounded by
`tritonops_door_balance_factor` (default 150; render/door_config.py says how). HAProxy's Prometheus exporter (:8405)
binds to the balancer's private address, as the replicas do on theirs (planning/bind.py): the balancer's own
`tritonops_bind_address` (an IP address; `0.0.0.0` or `::` only when set so), else `ansible_host` when it is a private
or loopback IP address, else an InputError naming the variable (`exporter_bind`). A serving host is reached at
`tritonops_replica_address` (default: a specific `tritonops_bind_address`, else `ansible_host`, else its name),
each replica at the ports its release recorded, taking as many requests at once as vLLM's `max_num_seqs`.

Pure: no I/O; a bad value is an InputError naming the variable and where it was set.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from tritonops.errors import InputError
from tritonops.modes.base import ServingMode
from tritonops.modes.kserve import KSERVE
from tritonops.planning.bind import given_bind, private_connection
from tritonops.planning.entries import host_where
from tritonops.planning.serve_record import ServeRecord
from tritonops.render.door_config import LEASTCONN, ROUTINGS, BalancedReplica, BalancerConfig, BalancerGlobals
from tritonops.values.names import safe_name
from tritonops.values.numbers import whole_number

BALANCERS_GROUP = "tritonops_balancers"
HTTP_PORT_VAR = "tritonops_door_http_port"
GRPC_PORT_VAR = "tritonops_door_grpc_port"
QUEUE_TIMEOUT_VAR = "tritonops_queue_timeout_ms"
MAX_QUEUE_VAR = "tritonops_max_queue"
LONGEST_VAR = "tritonops_longest_generation_s"
DRAIN_VAR = "tritonops_drain_timeout_s"
KEYS_VAR = "tritonops_api_keys_file"
TLS_VAR = "tritonops_tls_pem"
ADDRESS_VAR = "tritonops_replica_address"
BIND_VAR = "tritonops_bind_address"
ROUTING_VAR = "tritonops_door_routing"
PREFIX_BYTES_VAR = "tritonops_door_prefix_bytes"
BALANCE_FACTOR_VAR = "tritonops_door_balance_factor"

DEFAULT_QUEUE_TIMEOUT_MS = 2000
DEFAULT_MAX_QUEUE = 256
DEFAULT_LONGEST_S = 900
DEFAULT_DRAIN_S = 120
DEFAULT_PREFIX_BYTES = 1024
DEFAULT_BALANCE_FACTOR = 150
_OFF = ("off", "none", "false", "no")


@dataclass(frozen=True)
class Door:
    """One balancer's door settings, as its variables say."""
    http_port: int = 8000
    grpc_port: int | None = 8001
    queue_timeout_ms: int = DEFAULT_QUEUE_TIMEOUT_MS
    max_queue: int = DEFAULT_MAX_QUEUE
    longest_generation_s: int = DEFAULT_LONGEST_S
    keys_file: str | None = None
    tls_pem: str | None = None
    drain_timeout_s: int = DEFAULT_DRAIN_S
    routing: str = LEASTCONN
    prefix_bytes: int = DEFAULT_PREFIX_BYTES
    balance_factor: int = DEFAULT_BALANCE_FACTOR


@dataclass(frozen=True)
class ServedHost:
    """A serving host as its current release placed it: where balancers reach it, its replicas as
    (index, the port the HTTP door sends to (the mode's: KServe's HTTP port, or the OpenAI port), grpc port), and
    the requests each takes at once (vLLM's max_num_seqs)."""
    name: str
    address: str
    replicas: tuple[tuple[int, int, int], ...]
    max_num_seqs: int
    mode: ServingMode = KSERVE  # how its current release serves


class Host(Protocol):
    """An inventory host as planning reads it (tritonops.inventory.model.Host; the pure core imports no inventory
    model, which knows transports)."""
    name: str
    groups: tuple[str, ...]
    vars: dict[str, Any]


def is_balancer(host: Host) -> bool:
    return BALANCERS_GROUP in host.groups


def serving_hosts(hosts: Iterable[Host]) -> list:
    """The hosts that serve models, in order: all but the balancers, which serve nothing themselves."""
    return [host for host in hosts if not is_balancer(host)]


def balancers_among(hosts: Iterable[Host]) -> list:
    """The balancers among `hosts`, in order."""
    return [host for host in hosts if is_balancer(host)]


def _value(host: Host, name: str) -> tuple[Any, str | None]:
    value = host.vars.get(name)
    return (None if value == "" else value), host_where(host, name)


def door(host: Host) -> Door:
    """A balancer host's door from its variables (unset: the defaults)."""
    def number(name: str, default: int, minimum: int, maximum: int) -> int:
        value, where = _value(host, name)
        return default if value is None else whole_number(value, name, where, minimum=minimum, maximum=maximum)

    http_port = number(HTTP_PORT_VAR, 8000, 1, 65535)
    grpc_value, grpc_where = _value(host, GRPC_PORT_VAR)
    grpc_port: int | None
    if isinstance(grpc_value, str) and grpc_value.strip().lower() in _OFF or grpc_value is False:
        grpc_port = None
    else:
        grpc_port = 8001 if grpc_value is None else whole_number(grpc_value, GRPC_PORT_VAR, grpc_where, maximum=65535)
    if grpc_port == http_port:
        raise InputError(f"{GRPC_PORT_VAR} {grpc_port} is the same port as {HTTP_PORT_VAR}", grpc_where)
    routing, routing_where = _value(host, ROUTING_VAR)
    routing = LEASTCONN if routing is None else str(routing).strip().lower()
    if routing not in ROUTINGS:
        raise InputError(f"{ROUTING_VAR} {routing!r} is not {' or '.join(ROUTINGS)}", routing_where)
    factor = number(BALANCE_FACTOR_VAR, DEFAULT_BALANCE_FACTOR, 0, 10_000)
    if 0 < factor < 100:
        raise InputError(f"{BALANCE_FACTOR_VAR} {factor} is neither 0 (no bound) nor a percentage of the average load "
                         "of 100 or more", _value(host, BALANCE_FACTOR_VAR)[1])
    return Door(http_port, grpc_port,
                number(QUEUE_TIMEOUT_VAR, DEFAULT_QUEUE_TIMEOUT_MS, 1, 3_600_000),
                number(MAX_QUEUE_VAR, DEFAULT_MAX_QUEUE, 0, 1_000_000),
                number(LONGEST_VAR, DEFAULT_LONGEST_S, 1, 7 * 86400),
                _path(host, KEYS_VAR), _path(host, TLS_VAR), number(DRAIN_VAR, DEFAULT_DRAIN_S, 0, 86400),
                routing, number(PREFIX_BYTES_VAR, DEFAULT_PREFIX_BYTES, 1, 8192), factor)


def _path(host: Host, name: str) -> str | None:
    value, where = _value(host, name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith("/") or any(c.isspace() or c in "\"'\\#" for c in value):
        raise InputError(f"{name} {value!r} is not an absolute path on the balancer without spaces or quotes", where)
    return value


def exporter_bind(host: Host) -> str:
    """The address a balancer's HAProxy exporter binds to, never every address unless asked (module docstring):
    the serving hosts' rule (planning.bind) without a replica address."""
    given = given_bind(host)
    if given is not None:
        return given
    private, seen = private_connection(host)
    if private is not None:
        return private
    raise InputError(f"{host.name}: no private address to bind HAProxy's exporter to ({seen}): set {BIND_VAR} "
                     "(the balancer's private IP, where Prometheus scrapes it; 0.0.0.0 to expose it on every address)",
                     host_where(host, "ansible_host"))


def balancer_globals(host: Host, lua_scripts: tuple[str, ...] = ()) -> BalancerGlobals:
    """A balancer's global section: its exporter bound to exporter_bind(host), loading `lua_scripts`."""
    return BalancerGlobals(metrics_address=exporter_bind(host), lua_scripts=lua_scripts)


def replica_address(host: Host) -> str:
    """Where balancers reach a serving host's replicas: `tritonops_replica_address`, else a specific bind address,
    else `ansible_host`, else the inventory name."""
    for name in (ADDRESS_VAR, BIND_VAR, "ansible_host"):
        value, where = _value(host, name)
        if value is None or (name == BIND_VAR and str(value) in ("0.0.0.0", "::")):
            continue
        return _address(str(value), name, where)
    return _address(host.name, "the host's name", None)


def _address(value: str, field: str, where: str | None) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    labels = value.rstrip(".").split(".")
    if value and len(value) <= 253 and all(label and len(label) <= 63 and label[0] != "-" and label[-1] != "-"
                                           and all(c.isalnum() or c == "-" for c in label) for label in labels):
        return value
    raise InputError(f"{field} {value!r} is neither an IP address nor a host name", where)


def server_name(host: str, index: int) -> str:
    """HAProxy's name of a host's replica: `<host>-r<index>`, the name drain and ready address."""
    return f"{safe_name(host, 'host name')}-r{index}"


def balancer_config(deployment: str, settings: Door, hosts: Iterable[ServedHost]) -> BalancerConfig:
    """The deployment's door over every replica of `hosts`, in the hosts' order then the replicas'."""
    replicas = tuple(BalancedReplica(server_name(h.name, index), h.address, http, grpc, h.max_num_seqs)
                     for h in hosts for index, http, grpc in h.replicas)
    if not replicas:
        raise InputError(f"deployment {deployment}: no serving host has a current release to balance")
    modes = {h.mode.name: h.mode for h in hosts}
    if len(modes) > 1:
        raise InputError(f"deployment {deployment}: its hosts serve in different modes ({', '.join(sorted(modes))}); "
                         "a door balances replicas of one mode")
    return BalancerConfig(deployment=deployment, replicas=replicas, mode=next(iter(modes.values())),
                          http_port=settings.http_port,
                          grpc_port=settings.grpc_port, queue_timeout_ms=settings.queue_timeout_ms,
                          max_queue=settings.max_queue, server_timeout_s=settings.longest_generation_s,
                          keys_file=settings.keys_file, tls_pem=settings.tls_pem, routing=settings.routing,
                          prefix_bytes=settings.prefix_bytes, balance_factor=settings.balance_factor)


def served_host(host: Host, serve: ServeRecord, max_num_seqs: int) -> ServedHost:
    """A serving host from its release's serve record: each replica's HTTP door port and gRPC port, in its mode."""
    mode = serve.mode
    replicas = tuple((r.index, mode.endpoints(r.ports)[mode.http_door_role], mode.endpoints(r.ports)["grpc"])
                     for r in serve.replicas)
    return ServedHost(host.name, replica_address(host), replicas,
                      whole_number(max_num_seqs, f"{host.name}: max_num_seqs", None), mode)
