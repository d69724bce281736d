"""HAProxy's configuration for the front door (issue #31): one global file, one file per deployment.

`haproxy -f DIR` loads the `.cfg` files of DIR in C-locale name order, so the global section and the
defaults (`GLOBALS_FILE`, "00-...") come before every deployment's doors (`deployment_file`, "10-...").

Each deployment gets an HTTP door and, optionally, a gRPC door, each a frontend in front of its own
backend of the deployment's replicas. The doors answer for themselves whatever the replicas must not
see: a path that is not exposed (403), a missing or unknown API key (401), no replica up (503), a full
queue (503) -- a JSON body {"error", "reason"} over HTTP, a gRPC status whose message starts with the
reason over gRPC (`Refusal`). The backend's `timeout queue` is the other half of the circuit breaker: a
request still waiting for a free replica after queue_timeout_ms gets HAProxy's own 503, given the same
shape with `http-error`. The names HAProxy knows the backends and servers by come only from validated
names, so that the runtime commands (`set server <backend>/<server> state drain`) can address them.

Pure: every value is checked before it reaches the text, and nothing from the input is quoted or escaped;
what would need quoting (whitespace, quotes, '#', '$', '\\') is refused instead.
"""

from __future__ import annotations

import ipaddress
import json
import re
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from tritonops.errors import InputError
from tritonops.modes.base import ServingMode
from tritonops.modes.kserve import KSERVE
from tritonops.values.names import safe_name
from tritonops.values.numbers import whole_number

GLOBALS_FILE = "00-tritonops.cfg"
CHECK_FALL = 3
CHECK_RISE = 2
OBSERVED_ERRORS = 10  # consecutive layer-7 errors in real traffic that mark a replica down at once
# A request a replica loses before answering a byte (its process died under it, a refused or reset connection, an
# empty reply) is sent again, each time to another replica (`option redispatch 1`), at most RETRIES times. Only
# before any byte of an answer: once HAProxy has a response header it forwards it and never retries, so a stream
# already flowing may be cut, never replayed. HTTP retries the lost requests (L7 retries): HAProxy keeps a copy of a
# request only when the whole of it was in hand before its first byte left for the replica, hence the HTTP backend
# waits for each request's body (`option http-buffer-request`, within `timeout http-request`); one bigger than the
# buffer (tune.bufsize, 16 kB, less its reserve) is passed on as it comes and is not retried. gRPC retries only
# connections that failed before the call was sent (conn-failure, HAProxy's default): a call a replica already holds
# is an open stream, whose messages must never be replayed.
RETRIES = 2
HTTP_RETRY_ON = ("conn-failure", "empty-response")
GRPC_RETRY_ON = ("conn-failure",)
# every request through a door is logged (HAProxy's HTTP log: its timers TR/Tw/Tc/Tr/Ta, status, termination
# state) into a ring in the balancer's memory, read with `show events tritonops_log` on the stats socket
# (door/request_log.py): the newest lines that fit in LOG_RING_BYTES, gone on a reload or restart
LOG_RING = "tritonops_log"
LOG_RING_BYTES = 4 << 20

_SERVER_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_MAX_SERVER_NAME = 128
_DNS_LABEL = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")
_MAX_DNS_NAME = 253
# A path on the balancer: absolute, and nothing HAProxy's parser would read as a delimiter, a quote,
# a comment, an escape or a variable.
_PATH = re.compile(r"/[A-Za-z0-9_.+-]+(/[A-Za-z0-9_.+-]+)*")
_MAX_PATH = 1024
_MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the final NUL
_MAX_PORT = 65535
_MAX_CONNECTIONS = 1_000_000

# How the HTTP door picks a replica (issue #44): LEASTCONN, the one with the fewest requests; PREFIX, by a hash of
# the prompt's first prefix_bytes (door/prefix_key.lua, a Lua fetch over the part of the body HAProxy holds) on a
# consistent-hash ring with bounded load (`hash-balance-factor`: no replica past that percentage of the average
# load takes another key's request; 0: no bound), so that requests sharing a prefix reach the replica whose vLLM
# already holds it in its prefix cache. Every balancer renders the same servers with the same ids and weights, so
# each makes the same choice for the same prompt; a server's id comes from its name, so a replica that comes or
# goes moves only its own share of the keys. A request without a key (no prompt field in the part held, not
# JSON, not a POST) is spread instead. gRPC stays on leastconn.
LEASTCONN, PREFIX = "leastconn", "prefix"
ROUTINGS = (LEASTCONN, PREFIX)
PREFIX_KEY_FETCH = "tritonops_prefix_key"  # the Lua fetch door/prefix_key.lua registers
PREFIX_KEY_VAR = "txn.tritonops_key"
SERVER_WEIGHT = 100  # points per server on the ring: HAProxy places weight x 16, so keys spread evenly
_MAX_ID = 2**31 - 1

# Triton's gRPC service: the calls that pass the door. Model control (RepositoryIndex,
# RepositoryModelLoad/Unload), LogSettings, TraceSetting, the shared-memory calls, ModelConfig and
# ModelStatistics do not (the same as over HTTP).
_GRPC_SERVICE = "/inference.GRPCInferenceService/"
_GRPC_CALLS = ("ServerLive", "ServerReady", "ServerMetadata", "ModelReady", "ModelMetadata",
               "ModelInfer", "ModelStreamInfer")
_GRPC_OPEN = ("ServerLive", "ServerReady")


@dataclass(frozen=True)
class BalancedReplica:
    """One Triton replica behind the balancer."""

    name: str  # HAProxy's server name, e.g. "node-a-r0"
    address: str  # an IP address or a DNS name, as the balancer reaches the replica
    http_port: int
    grpc_port: int
    maxconn: int  # requests it serves at once (planning passes vLLM's max_num_seqs)


@dataclass(frozen=True)
class BalancerConfig:
    """One deployment's front door."""

    deployment: str
    replicas: tuple[BalancedReplica, ...]
    http_port: int = 8000  # the HTTP door (HTTPS with tls_pem)
    grpc_port: int | None = 8001  # None: no gRPC door
    queue_timeout_ms: int = 2000  # longest wait for a free replica, then 503 queue_timeout
    max_queue: int = 256  # requests waiting at most beyond the replicas' maxconn, then 503 queue_full
    server_timeout_s: int = 900  # above the longest expected generation
    check_interval_ms: int = 2000
    keys_file: str | None = None  # bearer tokens, one a line, on the balancer; None: no key needed
    tls_pem: str | None = None  # certificate and key in one PEM on the balancer; None: plain HTTP
    bind_address: str = "*"  # the doors' address on the balancer: "*" for all, or one IP address
    mode: ServingMode = KSERVE  # how the replicas serve: what the HTTP door passes and checks, its answers' shape
    routing: str = LEASTCONN  # how the HTTP door picks a replica (ROUTINGS)
    prefix_bytes: int = 1024  # routing prefix: how much of the prompt makes its key
    balance_factor: int = 150  # routing prefix: a replica takes no other key's request past this % of the average


@dataclass(frozen=True)
class BalancerGlobals:
    """The balancer host's one global section."""

    stats_socket: str = "/run/haproxy/tritonops-admin.sock"
    metrics_port: int = 8405  # HAProxy's Prometheus exporter (/metrics)
    # connections at once; HAProxy wants about twice as many file descriptors and will not start without them:
    # 8000 fits a 20,000-descriptor limit (the lab's containers, which cannot raise theirs)
    maxconn: int = 8000
    # where the exporter binds: one IP address (planning.balancer.exporter_bind: the balancer's private one), or "*"
    # for every address; loopback unless given, so nothing off the balancer reads it unasked
    metrics_address: str = "127.0.0.1"
    # Lua scripts HAProxy loads (`lua-load`), paths on the balancer: door/prefix_key.lua where a door routes by prefix
    lua_scripts: tuple[str, ...] = ()


def http_backend(deployment: str) -> str:
    """The backend of the deployment's HTTP door: `set server <this>/<replica> state drain`."""
    return f"tritonops_{safe_name(deployment, 'deployment')}_http"


def grpc_backend(deployment: str) -> str:
    """The backend of the deployment's gRPC door."""
    return f"tritonops_{safe_name(deployment, 'deployment')}_grpc"


_PROXY = re.compile(r"tritonops_(.+)_(http|grpc)(_door)?")


def door_of_proxy(name: str) -> tuple[str, str, str] | None:
    """(deployment, "http" | "grpc", "backend" | "frontend") of a proxy a door renders (what `show stat` and the
    Prometheus exporter call `pxname` / `proxy`); None for any other (the metrics frontend, a hand-written one)."""
    match = _PROXY.fullmatch(name)
    if not match:
        return None
    return match[1], match[2], "frontend" if match[3] else "backend"


def deployment_file(deployment: str) -> str:
    """The deployment's file beside GLOBALS_FILE: its name sorts after it, whatever the deployment."""
    return f"10-{safe_name(deployment, 'deployment')}.cfg"


# --- what the doors answer themselves ------------------------------------------------------------------

@dataclass(frozen=True)
class Refusal:
    """One answer a door gives without a replica: over HTTP a status and a JSON body
    {"error", "reason"}; over gRPC a trailers-only answer with `grpc-status` and a `grpc-message` that
    starts with the reason (a gRPC client reads no body, and reads no grpc-status beside an HTTP error)."""

    reason: str
    http_status: int
    grpc_status: int  # PERMISSION_DENIED 7, UNAUTHENTICATED 16, UNAVAILABLE 14: a client may retry 14
    error: str

    def json(self, mode: ServingMode = KSERVE) -> str:
        """The HTTP body, in the shape the replicas' mode's clients read (kserve: {"error", "reason"})."""
        body = json.dumps(mode.error_body(self.reason, self.http_status, self.error))
        if set("'%\\\n") & set(body):  # it goes between single quotes, where HAProxy interprets nothing
            raise ValueError(f"a door's answer cannot hold quotes, '%', backslashes or newlines: {body}")
        return body

    def grpc_message(self) -> str:
        return f"{self.reason}: {self.error}"


NOT_EXPOSED = Refusal("not_exposed", 403, 7, "this path is not served through the front door")
UNAUTHORIZED = Refusal("unauthorized", 401, 16, "an API key is needed: Authorization: Bearer <key>")
NO_REPLICA = Refusal("no_replica", 503, 14, "no replica of this deployment is up")
QUEUE_FULL = Refusal("queue_full", 503, 14, "too many requests are waiting for a replica; retry later")
QUEUE_TIMEOUT = Refusal("queue_timeout", 503, 14, "the request waited too long for a free replica")
REFUSALS = (NOT_EXPOSED, UNAUTHORIZED, NO_REPLICA, QUEUE_FULL, QUEUE_TIMEOUT)
# every text goes between single quotes, where HAProxy interprets nothing, and grpc-message is a
# log-format string, where '%' would start a variable
assert not any(set("'%\\\n") & set(r.json() + r.grpc_message()) for r in REFUSALS)


def _http_return(mode: ServingMode) -> Callable[[Refusal, str], str]:
    def answer(refusal: Refusal, condition: str) -> str:
        extra = " hdr www-authenticate Bearer" if refusal is UNAUTHORIZED else ""
        return (f"    http-request return status {refusal.http_status} content-type application/json"
                f" string '{refusal.json(mode)}'{extra} {condition}")
    return answer


def _grpc_return(refusal: Refusal, condition: str) -> str:
    # without a payload HAProxy drops any content-type given here: the gRPC door's http-after-response
    # rule adds it
    return (f"    http-request return status 200 hdr grpc-status {refusal.grpc_status}"
            f" hdr grpc-message '{refusal.grpc_message()}' {condition}")


# --- rendering ----------------------------------------------------------------------------------------

def render_globals(g: BalancerGlobals) -> str:
    """The global section, the defaults every door inherits, and the Prometheus exporter's frontend."""
    socket = _balancer_path(g.stats_socket, "stats_socket", "balancer", maximum=_MAX_SOCKET_PATH)
    metrics_port = _port(g.metrics_port, "metrics_port", "balancer")
    maxconn = whole_number(g.maxconn, "maxconn", "balancer", maximum=_MAX_CONNECTIONS, strings=False)
    address = _bind_address(g.metrics_address, "metrics_address", "balancer")
    scripts = [_balancer_path(path, "lua_scripts", "balancer") for path in g.lua_scripts]
    return "\n".join([
        "# tritonops: the balancer's global section, defaults and metrics (rendered; edits are replaced)",
        "global",
        "    master-worker",
        f"    maxconn {maxconn}",
        f"    stats socket {socket} mode 600 level admin expose-fd listeners",
        *(f"    lua-load {path}" for path in scripts),
        f"    log ring@{LOG_RING} local0 info",
        "",
        f"ring {LOG_RING}",
        "    format iso",
        "    maxlen 4096",
        f"    size {LOG_RING_BYTES}",
        "",
        "defaults",
        "    mode http",
        "    log global",
        "    option httplog",
        "    option dontlognull",  # a connection that sends nothing (a port probe) is no request
        "    timeout connect 5s",
        "    timeout client 30s",
        "    timeout server 30s",
        "    timeout http-request 10s",
        "    timeout http-keep-alive 10s",
        "    timeout check 5s",
        "",
        "frontend tritonops_metrics",
        f"    bind {address}:{metrics_port}",
        "    http-request use-service prometheus-exporter if { path /metrics }",
        "    http-request return status 404",
        "",
    ])


def render_deployment(c: BalancerConfig) -> str:
    """The deployment's doors: an HTTP frontend and backend, and a gRPC pair unless grpc_port is None."""
    deployment = safe_name(c.deployment, "deployment", "balancer")
    where = f"balancer {deployment}"
    door = _Door.checked(c, where)
    replicas = _replicas(c.replicas, where)
    lines = [f"# tritonops: the front door of deployment {deployment} (rendered; edits are replaced)"]
    lines += _http_door(deployment, door, replicas)
    if door.grpc_port is not None:
        lines += _grpc_door(deployment, door, replicas)
    return "\n".join(lines) + "\n"


def render_balancer_files(g: BalancerGlobals, configs: Iterable[BalancerConfig]) -> dict[str, str]:
    """Every file of the balancer's configuration directory, by name; a port bound twice on the
    balancer (by two doors, or a door and the metrics) or a deployment given twice is refused."""
    configs = list(configs)
    files = {GLOBALS_FILE: render_globals(g)}
    bound = {g.metrics_port: "metrics_port"}
    for c in configs:
        if c.routing == PREFIX and not g.lua_scripts:
            raise InputError(f"deployment {c.deployment!r} routes by prefix: the balancer must load the prefix key's "
                             "Lua script (BalancerGlobals.lua_scripts)", "balancer")
        name = deployment_file(c.deployment)
        if name in files:
            raise InputError(f"deployment {c.deployment!r} is given twice", "balancer")
        files[name] = render_deployment(c)
        for port, field in ((c.http_port, "http_port"), (c.grpc_port, "grpc_port")):
            if port is None:
                continue
            if port in bound:
                raise InputError(f"{field} {port} is bound twice on the balancer (also {bound[port]})",
                                 f"balancer {c.deployment}")
            bound[port] = f"{c.deployment}'s {field}"
    return files


@dataclass(frozen=True)
class _Door:
    """A BalancerConfig's values past their checks."""

    address: str
    http_port: int
    grpc_port: int | None
    queue_timeout_ms: int
    max_queue: int
    server_timeout_s: int
    check_interval_ms: int
    keys_file: str | None
    tls_pem: str | None
    check_path: str
    mode: ServingMode
    routing: str
    prefix_bytes: int
    balance_factor: int

    @classmethod
    def checked(cls, c: BalancerConfig, where: str) -> _Door:
        http_port = _port(c.http_port, "http_port", where)
        grpc_port = None if c.grpc_port is None else _port(c.grpc_port, "grpc_port", where)
        if grpc_port == http_port:
            raise InputError(f"grpc_port {grpc_port} is the same port as http_port", where)

        def number(value: Any, field: str, minimum: int = 1, maximum: int = 86_400_000) -> int:
            return whole_number(value, field, where, minimum=minimum, maximum=maximum, strings=False)

        if c.routing not in ROUTINGS:
            raise InputError(f"routing must be {' or '.join(ROUTINGS)}, not {_shown(c.routing)}", where)

        return cls(
            address=_bind_address(c.bind_address, "bind_address", where),
            http_port=http_port, grpc_port=grpc_port,
            queue_timeout_ms=number(c.queue_timeout_ms, "queue_timeout_ms"),
            # at least 1: "the queue already holds 0 requests" is always true and would refuse everything
            max_queue=number(c.max_queue, "max_queue", maximum=_MAX_CONNECTIONS),
            server_timeout_s=number(c.server_timeout_s, "server_timeout_s", maximum=86_400),
            check_interval_ms=number(c.check_interval_ms, "check_interval_ms", minimum=100, maximum=3_600_000),
            keys_file=None if c.keys_file is None else _balancer_path(c.keys_file, "keys_file", where),
            tls_pem=None if c.tls_pem is None else _balancer_path(c.tls_pem, "tls_pem", where),
            check_path=_check_path(c.mode.check_path, where), mode=c.mode, routing=c.routing,
            # the key is read from the part of the body HAProxy holds (its 16 kB buffer)
            prefix_bytes=number(c.prefix_bytes, "prefix_bytes", maximum=8192),
            # HAProxy's own bounds: 0 (no bound), or 100 (every replica at most the average) and above
            balance_factor=_balance_factor(c.balance_factor, where),
        )


def _http_door(deployment: str, door: _Door, replicas: list[BalancedReplica]) -> list[str]:
    backend = http_backend(deployment)
    tls = f" ssl crt {door.tls_pem} alpn h2,http/1.1" if door.tls_pem else ""
    frontend = [
        f"frontend tritonops_{deployment}_http_door",
        f"    bind {door.address}:{door.http_port}{tls}",
        f"    timeout client {door.server_timeout_s}s",
        f"    acl open path {' '.join(door.mode.door_open)}",
        f"    acl exposed path_reg '{door.mode.door_exposed}'",
        *(f"    acl {name} path {path}" for name, path in door.mode.door_refused),
    ]
    servers = [f"    server {r.name} {r.address}:{r.http_port} maxconn {r.maxconn}" for r in replicas]
    balance, routing = "leastconn", []
    if door.routing == PREFIX:
        # the slot the backend's capture of the key's hash fills: logged as {hash} (door/request_log.py)
        frontend.append("    declare capture request len 10")
        ids = server_ids([r.name for r in replicas])
        servers = [f"{line} id {ids[r.name]} weight {SERVER_WEIGHT}" for line, r in zip(servers, replicas)]
        balance = f"hash var({PREFIX_KEY_VAR})"
        routing = ["    hash-type consistent",
                   f"    hash-balance-factor {door.balance_factor}",
                   # a backend's http-request rules run before `option http-buffer-request` waits for the body
                   "    http-request wait-for-body time 10s if METH_POST",
                   f"    http-request set-var({PREFIX_KEY_VAR},ifnotempty) lua.{PREFIX_KEY_FETCH}({door.prefix_bytes})"
                   " if METH_POST",
                   f"    http-request capture var({PREFIX_KEY_VAR}),crc32 id 0 if {{ var({PREFIX_KEY_VAR}) -m found }}"]
    queue_timeout = (f"    http-error status 503 content-type application/json string "
                     f"'{QUEUE_TIMEOUT.json(door.mode)}'")
    refused = "".join(f" or {name}" for name, _ in door.mode.door_refused)
    return _door(frontend, f"if !exposed{refused}", _http_return(door.mode), backend, door, queue_timeout, servers,
                 HTTP_RETRY_ON, balance, routing)


def _grpc_door(deployment: str, door: _Door, replicas: list[BalancedReplica]) -> list[str]:
    backend = grpc_backend(deployment)
    tls = f" ssl crt {door.tls_pem} alpn h2" if door.tls_pem else ""
    frontend = [
        f"frontend tritonops_{deployment}_grpc_door",
        f"    bind {door.address}:{door.grpc_port}{tls} proto h2",
        f"    timeout client {door.server_timeout_s}s",
        "    acl open path " + " ".join(_GRPC_SERVICE + call for call in _GRPC_OPEN),
        "    acl exposed path " + " ".join(_GRPC_SERVICE + call for call in _GRPC_CALLS),
        # the door's own answers are gRPC answers too (grpc-go reads a response without it as UNKNOWN)
        "    http-after-response set-header content-type application/grpc unless { res.hdr(content-type) -m found }",
    ]
    # the replica's gRPC port speaks only gRPC: its health is read on its HTTP port, over HTTP/1.1
    servers = [f"    server {r.name} {r.address}:{r.grpc_port} proto h2 check port {r.http_port} check-proto h1"
               f" maxconn {r.maxconn}" for r in replicas]
    queue_timeout = (f"    http-error status 503 hdr grpc-status {QUEUE_TIMEOUT.grpc_status}"
                     f" hdr grpc-message '{QUEUE_TIMEOUT.grpc_message()}'")
    return _door(frontend, "unless exposed", _grpc_return, backend, door, queue_timeout, servers, GRPC_RETRY_ON)


def server_ids(names: Iterable[str]) -> dict[str, int]:
    """Each server's id in its backend, from its name alone (a CRC-32 of it; the next free one on a clash, in name
    order), so that every balancer, and the same balancer before and after a replica comes or goes, places each
    server at the same points of the consistent-hash ring."""
    ids: dict[str, int] = {}
    taken: set[int] = set()
    for name in sorted(names):
        value = zlib.crc32(name.encode()) % _MAX_ID + 1
        while value in taken:
            value = value % _MAX_ID + 1
        ids[name] = value
        taken.add(value)
    return ids


def _door(frontend: list[str], not_exposed: str, answer: Callable[[Refusal, str], str], backend: str,
          door: _Door, queue_timeout: str, servers: list[str], retry_on: tuple[str, ...],
          balance: str = "leastconn", routing: Iterable[str] = ()) -> list[str]:
    """A frontend's refusals in order (a path not exposed, no key, no replica up, a full queue), then
    its backend, which picks a replica by `balance` (with `routing`'s lines: how a prefix door keys its requests)
    and sends a request lost for `retry_on` to another replica."""
    acls, rules = [], [answer(NOT_EXPOSED, not_exposed)]
    if door.keys_file:
        acls.append(f"    acl key_ok http_auth_bearer -m str -f {door.keys_file}")
        rules += [answer(UNAUTHORIZED, "unless open or key_ok"),
                  # the key stays at the door: replicas and their logs never see it
                  "    http-request del-header authorization"]
    rules += [answer(NO_REPLICA, f"if {{ nbsrv({backend}) eq 0 }}"),
              answer(QUEUE_FULL, f"if {{ queue({backend}) ge {door.max_queue} }}")]
    return ["", *frontend, *acls, *rules, f"    default_backend {backend}", "",
            f"backend {backend}",
            f"    balance {balance}",
            f"    timeout server {door.server_timeout_s}s",
            f"    timeout queue {door.queue_timeout_ms}ms",
            # each server-sent event (a generated token) leaves at once: without it HAProxy 2.6 lets the
            # kernel hold small writes for a fuller packet, about 200 ms, and events arrive in bursts
            "    option http-no-delay",
            *(["    option http-buffer-request"] if retry_on != GRPC_RETRY_ON else []),
            f"    retry-on {' '.join(retry_on)}",
            f"    retries {RETRIES}",
            "    option redispatch 1",  # every retry to another replica, at once (no turn-around wait)
            *routing,
            "    option httpchk",
            f"    http-check send meth GET uri {door.check_path}",
            "    http-check expect status 200",
            # the one 503 HAProxy makes itself once a request is in the backend: its queue timed out
            queue_timeout,
            # max-reuse 0: each request on a connection of its own to its replica, so a server sent to a replica's
            # new container (Kamal's order, `set server ... addr`) takes no new request over a connection to the
            # old one, which answers errors as it stops (a gRPC client's HTTP/2 streams would share one)
            f"    default-server check inter {door.check_interval_ms}ms fall {CHECK_FALL} rise {CHECK_RISE}"
            f" observe layer7 error-limit {OBSERVED_ERRORS} on-error mark-down max-reuse 0",
            *servers]


# --- checks ---------------------------------------------------------------------------------------------

def _replicas(replicas: Any, where: str) -> list[BalancedReplica]:
    if not isinstance(replicas, (tuple, list)) or not replicas:
        raise InputError(f"replicas must name at least one replica, not {replicas!r:.40}", where)
    checked: list[BalancedReplica] = []
    names: dict[str, int] = {}
    endpoints: dict[tuple[str, int], str] = {}
    for index, replica in enumerate(replicas):
        field = f"replicas[{index}]"
        if not isinstance(replica, BalancedReplica):
            raise InputError(f"{field} must be a BalancedReplica, not {type(replica).__name__}", where)
        name = _server_name(replica.name, f"{field}.name", where)
        if name in names:
            raise InputError(f"{field}.name {name!r} is given twice (also replicas[{names[name]}].name)", where)
        names[name] = index
        address = _address(replica.address, f"{field}.address", where)
        http_port = _port(replica.http_port, f"{field}.http_port", where)
        grpc_port = _port(replica.grpc_port, f"{field}.grpc_port", where)
        for port, port_field in ((http_port, "http_port"), (grpc_port, "grpc_port")):
            other = endpoints.setdefault((address.lower(), port), f"{field}.{port_field}")
            if other != f"{field}.{port_field}":
                raise InputError(f"{field}.{port_field} {address} port {port} is already {other}", where)
        maxconn = whole_number(replica.maxconn, f"{field}.maxconn", where, maximum=_MAX_CONNECTIONS, strings=False)
        checked.append(BalancedReplica(name, address, http_port, grpc_port, maxconn))
    return checked


def _balance_factor(value: Any, where: str) -> int:
    factor = whole_number(value, "balance_factor", where, minimum=0, maximum=10_000, strings=False)
    if 0 < factor < 100:
        raise InputError(f"balance_factor must be 0 (no bound) or at least 100 (percent of the average load), "
                         f"not {factor}", where)
    return factor


def _port(value: Any, field: str, where: str) -> int:
    return whole_number(value, field, where, minimum=1, maximum=_MAX_PORT, strings=False)


def _server_name(value: Any, field: str, where: str) -> str:
    if not isinstance(value, str) or not _SERVER_NAME.fullmatch(value) or len(value) > _MAX_SERVER_NAME:
        raise InputError(f"{field} must be letters, digits, '_', '.' and '-' (at most {_MAX_SERVER_NAME}), "
                         f"not {_shown(value)}", where)
    return value


def _address(value: Any, field: str, where: str) -> str:
    """An IP address or a DNS name; an IPv6 address comes back bracketed, ready for `address:port`."""
    text = value if isinstance(value, str) else None
    if text:
        try:
            ip = ipaddress.ip_address(text)
        except ValueError:
            ip = None
        if ip is not None and getattr(ip, "scope_id", None) is None:  # no "%zone": routed addresses only
            return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed
        labels = text.removesuffix(".").split(".")
        numeric = all(label.isdigit() for label in labels)  # 10.1 is no IPv4 address, and no name either
        if len(text) <= _MAX_DNS_NAME and not numeric and all(_DNS_LABEL.fullmatch(label) for label in labels):
            return text
    raise InputError(f"{field} must be an IP address or a DNS name, not {_shown(value)}", where)


def _bind_address(value: Any, field: str, where: str) -> str:
    if value == "*":
        return "*"
    try:
        ip = ipaddress.ip_address(value) if isinstance(value, str) else None
    except ValueError:
        ip = None
    if ip is None:
        raise InputError(f"{field} must be '*' or an IP address, not {_shown(value)}", where)
    return f"[{ip.compressed}]" if ip.version == 6 else ip.compressed


def _check_path(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _PATH.fullmatch(value) or len(value) > _MAX_PATH:
        raise InputError(f"the serving mode's health check path must be a plain absolute path, not {_shown(value)}",
                         where)
    return value


def _balancer_path(value: Any, field: str, where: str, maximum: int = _MAX_PATH) -> str:
    if (not isinstance(value, str) or len(value) > maximum or not _PATH.fullmatch(value)
            or any(part in (".", "..") for part in value.split("/"))):
        raise InputError(f"{field} must be an absolute path of letters, digits, '_', '.', '+', '-' and '/' "
                         f"(no spaces, quotes or '..'; at most {maximum} characters), not {_shown(value)}", where)
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
