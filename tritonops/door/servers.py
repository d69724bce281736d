"""What a balancer's doors see of each replica (issue #31), from HAProxy's `show stat` (runtime.parse_stat): per
deployment and door (HTTP, gRPC), each server's state (UP, DRAIN, DOWN, MAINT), its sessions and its queue. For
`tritonops status`. Pure.

HAProxy's server names are tritonops' (planning.balancer.server_name: `<host>-r<index>`) and its backends are named
after the deployment (render.door_config.http_backend / grpc_backend); a proxy that is not a door's is left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from tritonops.door.runtime import StatRow
from tritonops.render.door_config import door_of_proxy

_SERVER = re.compile(r"(.+)-r([0-9]+)")


@dataclass(frozen=True)
class DoorServer:
    """One replica as one door of a balancer sees it."""
    deployment: str
    door: str             # http | grpc
    server: str           # HAProxy's name for it, <host>-r<index>
    host: str | None      # the serving host (None: a server tritonops did not name)
    replica: int | None   # its replica index
    state: str            # UP, DRAIN, DOWN, MAINT, NOLB, "no check"
    status: str           # HAProxy's whole status: "UP 1/3" is up with one failed check, "DOWN 1/2" coming up
    sessions: int         # requests it serves now (scur)
    queue: int            # requests waiting for it alone (qcur; most wait in the backend's queue)
    check: str | None     # the last health check: L7OK, L4CON, L7STS, ... (None: not checked)


@dataclass(frozen=True)
class DoorBackend:
    """One door's backend: the requests it serves, and those waiting for any free replica (leastconn with
    maxconn queues them here, not on a server)."""
    deployment: str
    door: str             # http | grpc
    state: str            # UP while one server is, else DOWN
    sessions: int
    queue: int


@dataclass(frozen=True)
class DoorStatus:
    """A balancer's doors: every server, and every backend, in HAProxy's order."""
    servers: tuple[DoorServer, ...]
    backends: tuple[DoorBackend, ...] = ()

    def deployments(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(server.deployment for server in self.servers))

    def up(self, deployment: str, door: str = "http") -> tuple[DoorServer, ...]:
        return tuple(s for s in self.servers if s.deployment == deployment and s.door == door and s.state == "UP")

    def summary(self) -> str:
        """One line: per deployment, how many replicas its HTTP door sends requests to, and the others' states."""
        said = []
        for deployment in self.deployments():
            http = [s for s in self.servers if s.deployment == deployment and s.door == "http"]
            others = [f"{s.server} {s.state}" for s in http if s.state != "UP"]
            said.append(f"{deployment}: {len(self.up(deployment))}/{len(http)} replicas UP"
                        + (f" ({', '.join(others)})" if others else ""))
        return "; ".join(said) or "no door"


def door_status(rows: Iterable[StatRow], deployments: Iterable[str] | None = None) -> DoorStatus:
    """The door servers of `rows` (all of the balancer's deployments, or those named), in HAProxy's order."""
    wanted = None if deployments is None else set(deployments)
    servers, backends = [], []
    for row in rows:
        door = door_of_proxy(row.backend)
        if door is None or door[2] != "backend" or (wanted is not None and door[0] not in wanted):
            continue
        if row.kind == "backend":
            backends.append(DoorBackend(door[0], door[1], row.state, row.scur, row.qcur))
            continue
        if row.kind != "server":
            continue
        named = _SERVER.fullmatch(row.server)
        servers.append(DoorServer(door[0], door[1], row.server, named[1] if named else None,
                                  int(named[2]) if named else None, row.state, row.status, row.scur, row.qcur,
                                  row.check_status))
    return DoorStatus(tuple(servers), tuple(backends))
