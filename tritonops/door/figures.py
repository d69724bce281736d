"""A balancer's door figures (issue #31) from HAProxy's `show stat` (runtime.parse_stat): per deployment and door,
the requests and what answered them, for `tritonops metrics`. Pure.

HAProxy counts answers by class (2xx, 4xx, 5xx) on the frontend, on the backend and on each server, and counts
the answers a frontend gave itself (`intercepted`). The door's answers (render.door_config) fall apart
exactly along those counters:
- the frontend's own 4xx (`not_exposed` 403, `unauthorized` 401) = frontend 4xx - backend 4xx;
- the frontend's own 503s (`no_replica` and `queue_full`, together: both are `http-request return` 503s and
  HAProxy keeps no counter apart for either) = frontend 5xx - backend 5xx;
- the backend's own 503s (`queue_timeout`: the request waited past tritonops_queue_timeout_ms, or no replica could
  be connected after the retries, which the door answers with the same body) = backend 5xx - the servers' 5xx;
- the replicas' own 5xx = the servers' 5xx.
Over gRPC the door's refusals are HTTP 200 answers carrying a grpc-status, so only their sum (`refused`) is known
there; a queue timeout is still HAProxy's 503. Counters start again at zero when haproxy reloads (a deploy that
changed the door): they count since the last reload. A door routing by prompt prefix adds what its request log
(request_log.routing) says of the requests it still holds: the share that reached their key's replica, the split.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tritonops.door.request_log import LoggedRequest, Routing, routing
from tritonops.door.runtime import StatRow
from tritonops.render.door_config import door_of_proxy


@dataclass(frozen=True)
class DoorFigures:
    deployment: str
    door: str                   # http | grpc
    requests: int               # every request the door took, since haproxy last (re)loaded
    rate: int | None            # requests in the last second
    answered_2xx: int
    answered_4xx: int
    answered_5xx: int
    refused: int                # the door's own answers, every reason (HAProxy's `intercepted`)
    refused_4xx: int            # not_exposed and unauthorized (HTTP)
    refused_503: int            # no_replica and queue_full (HTTP)
    queue_timeouts: int         # 503 queue_timeout
    replica_5xx: int            # 5xx the replicas answered
    queue: int                  # requests waiting for a free replica now
    queue_max: int | None       # the longest queue since start
    queue_ms: int | None        # average queue time of the last 1024 requests, ms
    queue_max_ms: int | None    # the longest queue time, ms
    replicas_up: int
    replicas: int
    routing: Routing | None = None  # a door routing by prompt prefix: what its request log says (issue #44)


@dataclass(frozen=True)
class BalancerFigures:
    doors: tuple[DoorFigures, ...]

    def summary(self) -> str:
        return "; ".join(f"{d.deployment} {d.door}: {d.requests:,} requests, {d.refused_503 + d.queue_timeouts:,} "
                         "refused with 503" for d in self.doors) or "no door"


def door_figures(rows: Iterable[StatRow], deployments: Iterable[str] | None = None,
                 logged: Iterable[LoggedRequest] = ()) -> BalancerFigures:
    """One DoorFigures per door of `rows` with both its frontend and its backend (all deployments, or those
    named), in HAProxy's order of the backends; an HTTP door whose `logged` requests carry keys (it routes by
    prompt prefix) with its routing."""
    logged = tuple(logged)
    wanted = None if deployments is None else set(deployments)
    frontends: dict[tuple[str, str], StatRow] = {}
    backends: dict[tuple[str, str], StatRow] = {}
    servers: dict[tuple[str, str], list[StatRow]] = {}
    for row in rows:
        door = door_of_proxy(row.backend)
        if door is None or (wanted is not None and door[0] not in wanted):
            continue
        key = (door[0], door[1])
        if door[2] == "frontend" and row.kind == "frontend":
            frontends[key] = row
        elif door[2] == "backend" and row.kind == "backend":
            backends[key] = row
        elif door[2] == "backend" and row.kind == "server":
            servers.setdefault(key, []).append(row)
    figures = []
    for key, backend in backends.items():
        front = frontends.get(key)
        if front is None:
            continue
        members = servers.get(key, [])
        replica_5xx = sum(server.hrsp_5xx for server in members)
        figures.append(DoorFigures(
            deployment=key[0], door=key[1], requests=front.req_tot, rate=front.req_rate,
            answered_2xx=front.hrsp_2xx, answered_4xx=front.hrsp_4xx, answered_5xx=front.hrsp_5xx,
            refused=front.intercepted, refused_4xx=max(front.hrsp_4xx - backend.hrsp_4xx, 0),
            refused_503=max(front.hrsp_5xx - backend.hrsp_5xx, 0),
            queue_timeouts=max(backend.hrsp_5xx - replica_5xx, 0), replica_5xx=replica_5xx,
            queue=backend.qcur, queue_max=backend.qmax, queue_ms=backend.qtime, queue_max_ms=backend.qtime_max,
            replicas_up=sum(server.state == "UP" for server in members), replicas=len(members),
            routing=_routing(logged, backend.backend)))
    return BalancerFigures(tuple(figures))


def _routing(logged: tuple[LoggedRequest, ...], backend: str) -> Routing | None:
    found = routing(logged, backend)
    return found if found.keyed else None
