"""What `lab up` has to do: compare the request with the lab hosts that exist. Pure.

A host is kept when its container carries the same spec hash (profile, kind, faults,
image) and runs; started when stopped; recreated when the spec changed; removed when no
longer requested. Ports are stable: a host keeps the port recorded for its name.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from tritonops.lab.defaults import PORT_BASE
from tritonops.lab.request import HostSpec, LabRequest


@dataclass(frozen=True)
class ExistingHost:
    """A lab container as found in the engine (from its labels)."""

    name: str
    container: str
    spec_hash: str
    running: bool
    port: int | None


@dataclass(frozen=True)
class HostAction:
    host: str
    action: str  # keep | start | create | recreate | remove
    port: int | None
    spec: HostSpec | None = None
    reason: str = ""


def spec_hash(spec: HostSpec, image_id: str) -> str:
    data = json.dumps({"spec": asdict(spec), "image": image_id}, sort_keys=True, default=str)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def assign_ports(names: list[str], recorded: dict[str, int], taken: set[int], base: int = PORT_BASE) -> dict[str, int]:
    """Recorded ports stay; new names get the lowest port from `base` that nobody uses."""
    ports = {n: recorded[n] for n in names if n in recorded}
    used = set(taken) | set(recorded.values())
    candidate = base
    for name in names:
        if name in ports:
            continue
        while candidate in used:
            candidate += 1
        ports[name] = candidate
        used.add(candidate)
    return ports


def plan_hosts(request: LabRequest, existing: list[ExistingHost], hashes: dict[str, str],
               ports: dict[str, int]) -> list[HostAction]:
    """One action per requested host (in request order), then removals."""
    found = {e.name: e for e in existing}
    actions = []
    for spec in request.hosts:
        have = found.get(spec.name)
        port = ports[spec.name]
        if have is None:
            actions.append(HostAction(spec.name, "create", port, spec, "new host"))
        elif have.spec_hash != hashes[spec.name] or have.port != port:
            actions.append(HostAction(spec.name, "recreate", port, spec, "profile, kind, faults or image changed"))
        elif not have.running:
            actions.append(HostAction(spec.name, "start", port, spec, "container was stopped"))
        else:
            actions.append(HostAction(spec.name, "keep", port, spec))
    wanted = {h.name for h in request.hosts}
    for e in existing:
        if e.name not in wanted:
            actions.append(HostAction(e.name, "remove", e.port, None, "not requested"))
    return actions
