"""HAProxy's runtime API as tritonops speaks it: the command lines it sends to a balancer's stats socket
(`level admin`), checked as they are built, and what HAProxy answers, read into typed rows. Pure: the
lines travel in the runtime program's arguments (runtime_program.py, host_programs/door_runtime.py).

HAProxy marks no answer as an error: a command that changes something answers nothing when it works
and a sentence when it does not ("No such backend."), so an answer is judged by its shape, with the
same rule on the host and here (`refusal`, from the host program). The words and numbers are HAProxy
2.6's (doc/management.txt: "show stat", "show servers state"); rows keep HAProxy's CSV names for the
counters (scur, qcur, stot, hrsp_5xx) so they read like its documentation.
"""

from __future__ import annotations

import csv
import ipaddress
import re
from dataclasses import dataclass

from tritonops.errors import InputError, TritonopsError, one_line
from tritonops.exit_codes import ExitCode
from tritonops.host_programs.haproxy_answers import refusal

SOCKET = "/run/haproxy/tritonops-admin.sock"  # the balancer's `stats socket ... level admin`
STATES = ("ready", "drain", "maint")
MAX_WEIGHT = 256
_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class RuntimeApiError(TritonopsError):
    """HAProxy's runtime API did not do what was asked; one line."""

    exit_code = ExitCode.HOST_FAILED

    def __init__(self, what: str):
        super().__init__(one_line(what))


class RuntimeRefused(RuntimeApiError):
    """HAProxy answered a command with an error (`answer`: its first line, e.g. "No such backend.")."""

    def __init__(self, command: str, answer: str):
        self.command, self.answer = command, one_line(answer)
        super().__init__(f"haproxy refused `{command}`: {self.answer}")


class RuntimeUnreachable(RuntimeApiError):
    """The stats socket could not be reached: no haproxy there, or not allowed."""


# --- the command lines ---------------------------------------------------------------------------

def checked_name(value: str, what: str) -> str:
    """`value` when it is a backend or server name tritonops sends; InputError otherwise."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise InputError(f"{value!r} is not a {what} name tritonops sends to HAProxy: letters, digits, "
                         "'_', '.' and '-' only", what)
    return value


def _server(backend: str, server: str) -> str:
    return f"{checked_name(backend, 'backend')}/{checked_name(server, 'server')}"


def set_server_state(backend: str, server: str, state: str) -> str:
    """ready: takes traffic; drain: no new traffic, the sessions it has run to their end (persistent
    clients still reach it); maint: no traffic and no health checks."""
    if state not in STATES:
        raise InputError(f"server state {state!r}: one of {', '.join(STATES)}", "state")
    return f"set server {_server(backend, server)} state {state}"


def set_server_weight(backend: str, server: str, weight: int) -> str:
    """The server's share of new traffic, 0 (none) to 256, relative to the other servers' weights."""
    if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= MAX_WEIGHT:
        raise InputError(f"server weight {weight!r}: a whole number from 0 to {MAX_WEIGHT}", "weight")
    return f"set server {_server(backend, server)} weight {weight}"


def set_server_address(backend: str, server: str, address: str, port: int) -> str:
    """Where the server's new connections go (its established ones stay where they are): an IP address and a port."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise InputError(f"server address {address!r}: an IP address", "address") from None
    return f"set server {_server(backend, server)} addr {ip} port {_port(port)}"


def set_server_check_port(backend: str, server: str, port: int) -> str:
    """The port the server's health checks ask (a gRPC server's checks ask its replica's HTTP port)."""
    return f"set server {_server(backend, server)} check-port {_port(port)}"


def _port(port: int) -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InputError(f"port {port!r}: a whole number from 1 to 65535", "port")
    return port


def shutdown_sessions(backend: str, server: str) -> str:
    """Ends every session on the server at once (after a drain that ran out of time)."""
    return f"shutdown sessions server {_server(backend, server)}"


def show_stat(backend: str | None = None) -> str:
    """Every proxy's and server's counters as CSV, or one backend's (its servers and its BACKEND row).
    Read the rows by name (`find_server`): HAProxy reads a filter name it does not know, when it
    starts with a digit, as a proxy id, and answers with that other proxy."""
    return "show stat" if backend is None else f"show stat {checked_name(backend, 'backend')} -1 -1"


def show_servers_state(backend: str | None = None) -> str:
    """Every server's admin and operational state, weights and address (the state-file format)."""
    return "show servers state" if backend is None else f"show servers state {checked_name(backend, 'backend')}"


def check_answer(command: str, answer: str) -> str:
    """`answer` when it is what success looks like for `command`; RuntimeRefused otherwise."""
    why = refusal(command, answer)
    if why:
        raise RuntimeRefused(command, why)
    return answer


# --- show stat -----------------------------------------------------------------------------------

_KINDS = {"0": "frontend", "1": "backend", "2": "server", "3": "listener"}


@dataclass(frozen=True)
class StatRow:
    """One row of `show stat`: a frontend, a backend (server "BACKEND"), a server or a listener."""
    backend: str               # pxname: the proxy
    server: str                # svname: the server, or FRONTEND / BACKEND
    kind: str                  # frontend | backend | server | listener
    status: str                # UP, DOWN, DRAIN, MAINT, NOLB, "UP 1/3" (going down), "DOWN 1/2" (going up),
                               # "MAINT (via b/s)", "MAINT (resolution)", "no check"; OPEN / STOP for a frontend
    scur: int                  # current sessions
    qcur: int                  # requests queued for it now
    stot: int                  # sessions since start
    hrsp_5xx: int              # HTTP 5xx responses
    check_status: str | None   # L4OK, L7OK, L4CON, L7STS, ... (None: not checked)
    check_desc: str | None     # the check's words ("Layer4 check passed")
    weight: int | None         # effective weight (a backend: its servers' total)
    uweight: int | None        # the weight as set by configuration or `set server ... weight`
    slim: int | None           # session limit (maxconn)
    qlimit: int | None         # queue limit (maxqueue)
    address: str | None        # addr: ip:port of a server
    lastchg: int | None        # seconds since the status last changed
    # the counters `tritonops metrics` reads for a door (0 / None where HAProxy leaves the column empty)
    req_tot: int = 0           # HTTP requests since start (frontend, backend, server)
    req_rate: int | None = None  # HTTP requests in the last second (a frontend)
    hrsp_2xx: int = 0
    hrsp_4xx: int = 0
    intercepted: int = 0       # requests a frontend answered itself (http-request return / deny)
    qtime: int | None = None   # average queue time of the last 1024 requests, ms (a backend or server)
    qtime_max: int | None = None  # the longest queue time since start, ms
    qmax: int | None = None    # the longest queue since start
    econ: int = 0              # failed connections to a server, queue timeouts included

    @property
    def state(self) -> str:
        """The status's word: UP, DOWN, DRAIN, MAINT, NOLB, "no check", OPEN, ..."""
        return self.status if self.status == "no check" else self.status.split(" ", 1)[0]


def _count(value: str | None) -> int:
    return int(value) if value else 0


def _optional(value: str | None) -> int | None:
    return int(value) if value else None


def parse_stat(answer: str) -> tuple[StatRow, ...]:
    """`show stat`'s CSV -> rows, in HAProxy's order. Columns are found by their header names (their
    number grows with each HAProxy version); an error answer raises RuntimeRefused."""
    check_answer("show stat", answer)
    lines = [line for line in answer.splitlines() if line]
    header = next(csv.reader([lines[0][2:]]))
    rows = []
    for values in csv.reader(lines[1:]):
        field = dict(zip(header, values))
        try:
            rows.append(StatRow(
                backend=field["pxname"], server=field["svname"], kind=_KINDS.get(field.get("type", ""), "other"),
                status=field.get("status", ""), scur=_count(field.get("scur")), qcur=_count(field.get("qcur")),
                stot=_count(field.get("stot")), hrsp_5xx=_count(field.get("hrsp_5xx")),
                check_status=field.get("check_status") or None, check_desc=field.get("check_desc") or None,
                weight=_optional(field.get("weight")), uweight=_optional(field.get("uweight")),
                slim=_optional(field.get("slim")), qlimit=_optional(field.get("qlimit")),
                address=field.get("addr") or None, lastchg=_optional(field.get("lastchg")),
                req_tot=_count(field.get("req_tot")), req_rate=_optional(field.get("req_rate")),
                hrsp_2xx=_count(field.get("hrsp_2xx")), hrsp_4xx=_count(field.get("hrsp_4xx")),
                intercepted=_count(field.get("intercepted")), qtime=_optional(field.get("qtime")),
                qtime_max=_optional(field.get("qtime_max")), qmax=_optional(field.get("qmax")),
                econ=_count(field.get("econ"))))
        except (KeyError, ValueError) as err:
            raise RuntimeApiError(f"`show stat` row {','.join(values[:2])!r} is not HAProxy's CSV: {err}") from None
    return tuple(rows)


def find_server(rows: tuple[StatRow, ...], backend: str, server: str) -> StatRow:
    for row in rows:
        if row.kind == "server" and row.backend == backend and row.server == server:
            return row
    raise RuntimeApiError(f"haproxy has no server {backend}/{server} (the balancer's configuration names "
                          "the replicas' servers)")


def drained(rows: tuple[StatRow, ...], backend: str, server: str) -> bool:
    """The server has no session and nothing queued: its in-flight requests have finished."""
    row = find_server(rows, backend, server)
    return row.scur == 0 and row.qcur == 0


def server_status(rows: tuple[StatRow, ...]) -> dict[str, str]:
    """Every server's status, by "backend/server" (HAProxy's own way of naming one)."""
    return {f"{row.backend}/{row.server}": row.status for row in rows if row.kind == "server"}


# --- show servers state --------------------------------------------------------------------------

_OPERATIONAL = {0: "stopped", 1: "starting", 2: "running", 3: "stopping"}  # enum srv_state
_ADMIN_FLAGS = ((0x01, "maint (forced)"), (0x02, "maint (via tracked server)"), (0x04, "maint (configuration)"),
                (0x08, "drain (forced)"), (0x10, "drain (via tracked server)"),
                (0x20, "maint (address resolution)"), (0x40, "fqdn set at runtime"))  # enum srv_admin
_MAINT, _DRAIN = 0x01 | 0x02 | 0x04 | 0x20, 0x08 | 0x10
_CHECK_RESULTS = {0: "unknown", 1: "neutral", 2: "failed", 3: "passed", 4: "passed on condition"}  # CHK_RES_*


@dataclass(frozen=True)
class ServerState:
    """One line of `show servers state` (format version 1), its numbers decoded into words."""
    backend_id: int
    backend: str
    server_id: int
    server: str
    address: str
    port: int | None
    operational: str           # stopped | starting | running | stopping
    admin: str                 # ready | drain | maint: what `set server ... state` set (or inherited)
    admin_flags: tuple[str, ...]  # why, e.g. ("drain (forced)",); () when ready
    uweight: int               # the weight now
    iweight: int               # the weight in the configuration
    since_change_s: int        # seconds since the operational state changed
    check_result: str          # unknown | neutral | failed | passed | passed on condition
    fqdn: str | None


def parse_servers_state(answer: str) -> tuple[ServerState, ...]:
    """`show servers state`'s answer -> one ServerState per server; an error answer raises RuntimeRefused,
    another format version RuntimeApiError (HAProxy bumps it when the columns change)."""
    check_answer("show servers state", answer)
    lines = [line for line in answer.splitlines() if line]
    if lines[0] != "1":
        raise RuntimeApiError(f"`show servers state` answered in format {lines[0]}; tritonops reads format 1")
    if len(lines) < 2 or not lines[1].startswith("# "):
        raise RuntimeApiError("`show servers state` answered without its header line")
    header = lines[1][2:].split()
    states = []
    for line in lines[2:]:
        field = dict(zip(header, line.split()))
        try:
            admin = int(field["srv_admin_state"])
            states.append(ServerState(
                backend_id=int(field["be_id"]), backend=field["be_name"], server_id=int(field["srv_id"]),
                server=field["srv_name"], address=field["srv_addr"],
                port=int(field["srv_port"]) if field.get("srv_port", "0") not in ("0", "-") else None,
                operational=_OPERATIONAL.get(int(field["srv_op_state"]), "unknown"),
                admin="maint" if admin & _MAINT else "drain" if admin & _DRAIN else "ready",
                admin_flags=tuple(word for bit, word in _ADMIN_FLAGS if admin & bit),
                uweight=int(field["srv_uweight"]), iweight=int(field["srv_iweight"]),
                since_change_s=int(field["srv_time_since_last_change"]),
                check_result=_CHECK_RESULTS.get(int(field["srv_check_result"]), "unknown"),
                fqdn=None if field.get("srv_fqdn", "-") == "-" else field["srv_fqdn"]))
        except (KeyError, ValueError) as err:
            raise RuntimeApiError(f"`show servers state` line {line[:80]!r} is not format 1: {err}") from None
    return tuple(states)
