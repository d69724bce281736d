"""The doors' request log as HAProxy keeps it: every request through a door is one line of HAProxy's HTTP log
format in a ring in the balancer's memory (render/door_config.py: LOG_RING), read with `show events` on the
stats socket (the runtime program's `send`). Pure: the command line, and the lines read into typed rows.

HAProxy 2.6's HTTP log format (doc/configuration.txt, 8.2.3 "HTTP log format"), after the ring's ISO timestamp:

    %ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq %hr %hs %{+Q}r

%hr is `{...}` only where the frontend declares a capture: a door that routes by prefix captures a hash of each
request's key there (render/door_config.py), empty for a request without one.

The timers are HAProxy's own, in milliseconds, -1 where a stage never happened (a refusal the door answers itself
has no queue, connection or server response: Tw/Tc/Tr -1). Ta is the request's whole active time at the balancer,
from its first byte received to the last byte of the answer sent (the client's idle time before it excluded).
Lines of another shape in the ring (a server marked DOWN, a reload's notices) are not requests: left out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tritonops.render.door_config import LOG_RING

_TIMER = r"(-?\d+)"
_LINE = re.compile(
    r"(?P<client>\S+) \[(?P<accepted>[^\]]+)\] (?P<frontend>\S+) (?P<backend>[^/\s]+)/(?P<server>\S+) "
    rf"{_TIMER}/{_TIMER}/{_TIMER}/{_TIMER}/\+?{_TIMER} (?P<status>-?\d+) \+?(?P<bytes>\d+) "
    r"\S+ \S+ (?P<termination>\S{4}) \S+ \S+ (?:\{(?P<captured>[^}]*)\} )?(?:\{[^}]*\} )*\"(?P<request>[^\"]*)\"")


@dataclass(frozen=True)
class LoggedRequest:
    """One request as the door logged it."""
    frontend: str          # the door, e.g. tritonops_chat_http_door (a TLS door's name ends with "~")
    backend: str           # its backend, or the frontend's own name when the door answered itself
    server: str            # the replica that served it; "<NOSRV>" when none did
    request_ms: int        # TR: receiving the request's headers
    queue_ms: int          # Tw: waiting in the queues for a free replica (-1: never queued)
    connect_ms: int        # Tc: connecting to the replica (-1: never connected)
    response_ms: int       # Tr: the replica's response headers (-1: none)
    active_ms: int         # Ta: the whole request at the balancer, received to answered
    status: int            # the HTTP status sent (-1: none)
    termination: str       # how the session ended, 4 characters (e.g. "----" normally, "LR--" answered by the
                           # door itself, "sQ--" its queue timed out, "SD--" the server cut the data)
    request: str           # the request line, e.g. "POST /v2/models/m/generate HTTP/1.1"
    key_hash: str | None = None  # a door that routes by prefix: a CRC-32 of the request's prefix key (None: no key)


def show_events() -> str:
    """The runtime API's line that reads the doors' request log (every line the ring still holds)."""
    return f"show events {LOG_RING}"


def parse_request_log(answer: str) -> tuple[LoggedRequest, ...]:
    """`show events`' answer -> the requests it logged, oldest first."""
    found = []
    for line in answer.splitlines():
        match = _LINE.search(line)
        if match is None:
            continue
        tr, tw, tc, tresp, ta = (int(value) for value in match.groups()[5:10])
        found.append(LoggedRequest(match["frontend"], match["backend"], match["server"], tr, tw, tc, tresp, ta,
                                   int(match["status"]), match["termination"], match["request"],
                                   match["captured"] or None))
    return tuple(found)


@dataclass(frozen=True)
class Routing:
    """How a door that routes by prompt prefix spread the requests its log still holds (issue #44)."""
    keyed: int                            # requests with a key (its hash logged)
    stickiness: float | None              # the share of those that reached their key's most frequent replica
    split: tuple[tuple[str, int], ...]    # requests per replica, keyed or not, in name order

    def said(self) -> str:
        split = " / ".join(f"{server} {count:,}" for server, count in self.split)
        sticky = "-" if self.stickiness is None else f"{self.stickiness:.0%}"
        return f"{self.keyed:,} keyed requests, {sticky} to their key's replica; split {split or '-'}"


def routing(logged: tuple[LoggedRequest, ...] | list[LoggedRequest], backend: str) -> Routing:
    """The routing of `backend`'s requests in the log: those a replica served (not the door's own answers)."""
    by_key: dict[str, dict[str, int]] = {}
    split: dict[str, int] = {}
    for row in logged:
        if row.backend != backend or row.server.startswith("<"):
            continue
        split[row.server] = split.get(row.server, 0) + 1
        if row.key_hash:
            servers = by_key.setdefault(row.key_hash, {})
            servers[row.server] = servers.get(row.server, 0) + 1
    keyed = sum(sum(servers.values()) for servers in by_key.values())
    sticky = sum(max(servers.values()) for servers in by_key.values())
    return Routing(keyed, round(sticky / keyed, 4) if keyed else None, tuple(sorted(split.items())))
