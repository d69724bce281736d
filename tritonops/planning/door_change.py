"""What a deployment's door on one balancer becomes, against the file it has now (issue #41): the servers added,
removed or re-addressed, each host's replicas before and after ("s1: 4 → 2 replicas"), and the servers a host that
could not be read keeps from that file. Pure: the balancer's current file is read by the caller.

The file is tritonops' own rendering (render.door_config): its HTTP backend's `server` lines give each replica's
name, address, HTTP port and maxconn, its gRPC backend's the gRPC port. A server whose name is not tritonops'
(`<host>-r<index>`) is left out of the comparison, as a hand edit is replaced anyway.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tritonops.planning.door import ServedHost
from tritonops.modes.base import ServingMode
from tritonops.render.door_config import BalancerConfig, grpc_backend, http_backend

_NAME = re.compile(r"(?P<host>.+)-r(?P<index>[0-9]+)")
_ENDPOINT = re.compile(r"(?P<address>.+):(?P<port>[0-9]+)")


@dataclass(frozen=True)
class DoorServer:
    """A replica as a door's file names it: where its HTTP door sends, its gRPC port (None: no gRPC door)."""
    name: str
    host: str
    index: int
    address: str
    http_port: int
    grpc_port: int | None
    maxconn: int

    @property
    def endpoint(self) -> tuple[str, int, int | None]:
        return self.address, self.http_port, self.grpc_port


def door_servers(text: str | None, deployment: str) -> dict[str, DoorServer]:
    """The servers of the deployment's door file (None or "": no door yet), by name, in the file's order."""
    if not text:
        return {}
    sections: dict[str, dict[str, tuple[str, str, int, str, int, int]]] = {"http": {}, "grpc": {}}
    backends = {f"backend {http_backend(deployment)}": "http", f"backend {grpc_backend(deployment)}": "grpc"}
    section = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = backends.get(line.strip())
            continue
        if section is None:
            continue
        words = line.split()
        if len(words) < 3 or words[0] != "server":
            continue
        named, endpoint = _NAME.fullmatch(words[1]), _ENDPOINT.fullmatch(words[2])
        if named is None or endpoint is None:
            continue
        maxconn = words[words.index("maxconn") + 1] if "maxconn" in words[:-1] else "0"
        sections[section][words[1]] = (named["host"], endpoint["address"], int(endpoint["port"]), words[1],
                                       int(named["index"]), int(maxconn) if maxconn.isdigit() else 0)
    servers = {}
    for name, (host, address, port, _, index, maxconn) in sections["http"].items():
        grpc = sections["grpc"].get(name)
        servers[name] = DoorServer(name, host, index, address, port, grpc[2] if grpc else None, maxconn)
    return servers


@dataclass(frozen=True)
class DoorChange:
    """One deployment's door on one balancer: before (its file) and after (the rendered config)."""
    deployment: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    readdressed: tuple[tuple[str, str, str], ...]   # (server, before, after) as address:port
    hosts: tuple[tuple[str, int, int], ...]         # (host, replicas before, after) of each host whose count moved

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.readdressed)

    def lines(self) -> list[str]:
        """What a person reads: each host whose replicas moved, then re-addressed servers."""
        said = [f"{host}: {before} → {after} replica{'s' if after != 1 else ''}" for host, before, after in self.hosts]
        said += [f"{server} moves {before} → {after}" for server, before, after in self.readdressed]
        return said


def _where(server: DoorServer) -> str:
    grpc = f", gRPC :{server.grpc_port}" if server.grpc_port is not None else ""
    return f"{server.address}:{server.http_port}{grpc}"


def door_change(before: Mapping[str, DoorServer], config: BalancerConfig, *, grpc: bool = True) -> DoorChange:
    """`config` against the servers its balancer's file has now (`door_servers`); `grpc`: whether the new door
    has a gRPC backend (its gRPC ports count)."""
    after = {r.name: r for r in config.replicas}
    added = tuple(name for name in after if name not in before)
    removed = tuple(name for name in before if name not in after)
    readdressed = []
    for name, replica in after.items():
        old = before.get(name)
        if old is None:
            continue
        new_grpc = replica.grpc_port if grpc else None
        if (old.address, old.http_port, old.grpc_port) != (replica.address, replica.http_port, new_grpc):
            readdressed.append((name, _where(old), _where(DoorServer(name, "", 0, replica.address, replica.http_port,
                                                                       new_grpc, replica.maxconn))))
    counted_before: dict[str, int] = {}
    for server in before.values():
        counted_before[server.host] = counted_before.get(server.host, 0) + 1
    counted_after: dict[str, int] = {}
    for replica in config.replicas:
        host = replica.name.rsplit("-r", 1)[0]
        counted_after[host] = counted_after.get(host, 0) + 1
    hosts = tuple((host, counted_before.get(host, 0), counted_after.get(host, 0))
                  for host in dict.fromkeys([*counted_before, *counted_after])
                  if counted_before.get(host, 0) != counted_after.get(host, 0))
    return DoorChange(config.deployment, added, removed, tuple(readdressed), hosts)


def kept_host(before: Mapping[str, DoorServer], host: str, mode: ServingMode, grpc: bool) -> ServedHost | None:
    """A host that could not be read, as the door's file has it now: its servers stay as they are. None when the
    file has none of it, or lacks what the new door needs of them (their gRPC ports, for a door that now has
    gRPC): then the caller leaves the whole door as it was."""
    servers = [s for s in before.values() if s.host == host]
    if not servers or (grpc and any(s.grpc_port is None for s in servers)) \
            or len({s.address for s in servers}) != 1 or len({s.maxconn for s in servers}) != 1:
        return None
    replicas = tuple((s.index, s.http_port, s.grpc_port if s.grpc_port is not None else s.http_port + 1)
                     for s in sorted(servers, key=lambda s: s.index))
    return ServedHost(host, servers[0].address, replicas, servers[0].maxconn or 1, mode)


def file_diff(name: str, before: str | None, after: str | None) -> str:
    """A unified diff of one door file (""  when equal), for --diff."""
    if (before or "") == (after or ""):
        return ""
    return "".join(difflib.unified_diff((before or "").splitlines(keepends=True),
                                        (after or "").splitlines(keepends=True),
                                        fromfile=f"before: {name}", tofile=f"after: {name}"))
