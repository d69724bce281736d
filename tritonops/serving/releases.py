"""What is deployed on a host: its releases (from each release.json), `current`, the container.

A fact like the probe: `releases_query(root, deployment)` is the command (a stdlib program run with
python3 on the host), `parse_releases` its pure parser. `rollback_target` picks the release a
rollback goes back to. Everything a rollback needs is on the host: no network beyond SSH.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tritonops.errors import TritonopsError
from tritonops.operations.facts import CommandQuery
from tritonops.serving.container import container_name

SOURCE = r'''
import json, os, subprocess, sys
root, container = sys.argv[1], sys.argv[2]
folder = os.path.join(root, "releases")
releases = []
for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
    if name.startswith("."):
        continue
    try:
        with open(os.path.join(folder, name, "release.json")) as handle:
            body = json.load(handle)
    except (OSError, ValueError):
        body = {}
    gates = body.get("gates") or []
    releases.append({"id": name, "created": body.get("created"), "image_id": body.get("image_id"),
                     "serve": body.get("serve"), "models": [m.get("name") for m in body.get("models", [])],
                     "gates": [{k: g.get(k) for k in ("at", "passed", "why", "ready_s", "kv_cache_tokens")} for g in gates]})
link = os.path.join(root, "current")
current = os.readlink(link) if os.path.islink(link) else None
done = subprocess.run(["docker", "inspect", container], capture_output=True, text=True)
state = None
if done.returncode == 0:
    info = json.loads(done.stdout)[0]
    s = info.get("State", {})
    state = {"status": s.get("Status"), "running": bool(s.get("Running")), "started_at": s.get("StartedAt"),
             "restarts": int(info.get("RestartCount", 0)), "image": info.get("Image"),
             "release": (info.get("Config", {}).get("Labels") or {}).get("tritonops.release")}
json.dump({"releases": releases, "current": current, "container": state}, sys.stdout)
'''


@dataclass(frozen=True)
class ReleaseRecord:
    id: str
    created: str | None
    image_id: str | None
    serve: dict | None
    models: tuple[str, ...] = ()
    gates: tuple[dict, ...] = ()

    @property
    def passed(self) -> bool:
        """Whether this release ever passed its health gate (and so served)."""
        return any(gate.get("passed") for gate in self.gates)


@dataclass(frozen=True)
class Deployed:
    releases: tuple[ReleaseRecord, ...]
    current: str | None               # release id `current` points to
    container: dict | None = field(default=None)

    def release(self, release_id: str) -> ReleaseRecord | None:
        return next((r for r in self.releases if r.id == release_id), None)


def releases_query(root: str, deployment: str) -> CommandQuery:
    return CommandQuery(("python3", "-c", SOURCE, root, container_name(deployment)))


def parse_releases(stdout: str) -> Deployed:
    try:
        data: Any = json.loads(stdout)
        releases = tuple(ReleaseRecord(r["id"], r.get("created"), r.get("image_id"), r.get("serve"),
                                       tuple(r.get("models") or ()), tuple(r.get("gates") or ()))
                         for r in data["releases"])
    except (ValueError, KeyError, TypeError) as err:
        raise TritonopsError(f"cannot read the deployed releases: {err}") from None
    current = data.get("current")
    return Deployed(releases, current.rsplit("/", 1)[-1] if current else None, data.get("container"))


def rollback_target(deployed: Deployed, to: str | None) -> ReleaseRecord:
    """The named release, or the newest one before `current` that served (passed its gate)."""
    if to:
        found = deployed.release(to)
        if found is None:
            known = ", ".join(r.id for r in deployed.releases) or "none"
            raise TritonopsError(f"no release {to} on this host (releases: {known})")
        return found
    if deployed.current is None:
        raise TritonopsError("nothing is deployed here (no current release): nothing to roll back")
    older = [r for r in deployed.releases if r.id < deployed.current and r.passed]
    if not older:
        raise TritonopsError(f"no earlier release that served before {deployed.current}: nothing to roll back to")
    return older[-1]
