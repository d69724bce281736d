"""What is deployed on a host: its releases (from each release.json), `current`, the container.

A fact like the probe: `releases_query(root, deployment)` is the command (a stdlib program run with
python3 on the host), `parse_releases` its pure parser, `read_deployed` the two over a transport. `rollback_target` picks the release a
rollback goes back to, `release_listing` what `tritonops releases` shows of them. Everything a rollback
needs is on the host: no network beyond SSH.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tritonops import host_programs
from tritonops.errors import TritonopsError
from tritonops.facts.queries import CommandQuery
from tritonops.facts.query_program import read_facts
from tritonops.modes.base import ServingMode
from tritonops.modes.choice import serving_mode
from tritonops.planning.serve_record import ServeRecord, ServeRecordError
from tritonops.text import printable
from tritonops.values.containers import container_name

if TYPE_CHECKING:
    from tritonops.transport.base import Transport

SOURCE = host_programs.source("deployed_releases")  # host_programs/deployed_releases.py


@dataclass(frozen=True)
class ReleaseRecord:
    id: str
    created: str | None
    image_id: str | None
    serve: ServeRecord | None     # how to start it (release.json's `serve`, read into the record)
    models: tuple[str, ...] = ()
    gates: tuple[dict, ...] = ()
    damaged: str | None = None   # why its release.json cannot be used (it is never gone back to)
    max_num_seqs: tuple[int, ...] = ()  # each model engine's, as release.json records them
    who: str | None = None       # user@controller that made it
    engine_args: str | None = None  # engine_args_digest of its model.json files (what vLLM is given)

    @property
    def capacity(self) -> int | None:
        """Requests a replica of this release serves at once: its engines' max_num_seqs together (None: not
        recorded)."""
        return sum(self.max_num_seqs) if self.max_num_seqs else None

    @property
    def bind(self) -> str | None:
        """The address its replicas bind their ports to, as release.json records it (`serve.bind`, checked when
        read); None for a release made before it was recorded."""
        return self.serve.bind if self.serve is not None else None

    @property
    def mode(self) -> ServingMode:
        """The mode it was started in (none recorded: the default)."""
        return self.serve.mode if self.serve is not None else serving_mode(None)

    @property
    def passed(self) -> bool:
        """Whether this release ever passed its health gate (and so served)."""
        return self.damaged is None and any(gate.get("passed") is True for gate in self.gates)

    @property
    def gate(self) -> str:
        """Its last health gate: passed or failed; 'not gated' when it never started (a --check, a run that
        stopped before the gate)."""
        if not self.gates:
            return "not gated"
        return "passed" if self.gates[-1].get("passed") is True else "failed"


@dataclass(frozen=True)
class Deployed:
    releases: tuple[ReleaseRecord, ...]
    current: str | None               # release id `current` points to
    container: dict | None = field(default=None)

    def release(self, release_id: str) -> ReleaseRecord | None:
        return next((r for r in self.releases if r.id == release_id), None)

    @property
    def current_release(self) -> ReleaseRecord | None:
        """The release `current` points to; None when nothing is deployed (or its record is gone)."""
        return self.release(self.current) if self.current else None

    @property
    def previous(self) -> ReleaseRecord | None:
        """The release a rollback goes back to: the newest one before `current` that served (passed its gate)."""
        if self.current is None:
            return None
        older = [r for r in self.releases if r.id < self.current and r.passed]
        return older[-1] if older else None


def releases_query(root: str, deployment: str) -> CommandQuery:
    return CommandQuery(("python3", "-c", SOURCE, root, container_name(deployment)))


def read_deployed(transport: Transport, root: str, deployment: str, host_ports: Mapping[str, int]) -> Deployed:
    """What is deployed under root/deployment on the host `transport` reaches; `host_ports`: its port variables
    (modes.choice.host_ports), where a release made before replicas runs its one replica."""
    query = releases_query(posixpath.join(root, deployment), deployment)
    return parse_releases(read_facts(transport, [query]).command(query.argv).stdout, host_ports)


def parse_releases(stdout: str, host_ports: Mapping[str, int]) -> Deployed:
    """The releases fact's output -> Deployed; TritonopsError when the output is not the program's.
    A release whose release.json is damaged (tampered, truncated, not ours) is kept with the reason
    in `damaged`: listed, never gone back to. `host_ports`: as read_deployed's."""
    try:
        data: Any = json.loads(stdout)
        listed = data["releases"]
        if not isinstance(listed, list):
            raise TypeError("releases is not a list")
        releases = tuple(_record(item, host_ports) for item in listed)
    except (ValueError, KeyError, TypeError) as err:
        raise TritonopsError(f"cannot read the deployed releases: {printable(str(err))}") from None
    current = data.get("current")
    container = data.get("container")
    return Deployed(releases, current.rsplit("/", 1)[-1] if isinstance(current, str) and current else None,
                    container if isinstance(container, dict) else None)


def _record(item: Any, host_ports: Mapping[str, int]) -> ReleaseRecord:
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        raise TypeError("a release without an id")
    release_id = item["id"]
    if item.get("damaged"):
        return ReleaseRecord(release_id, None, None, None, damaged=str(item["damaged"]))
    who = item.get("who") if isinstance(item.get("who"), str) else None
    engine_args = engine_args_digest(item.get("files"))
    serve, why = _serve(item.get("serve"), host_ports)
    image = item.get("image_id")
    if image is not None and not isinstance(image, str):
        why = why or "image_id is not a string"
    created = item.get("created") if isinstance(item.get("created"), str) else None
    models = tuple(m for m in item.get("models") or () if isinstance(m, str))
    gates = tuple(g for g in item.get("gates") or () if isinstance(g, dict))
    if why:
        return ReleaseRecord(release_id, created, None, None, models, gates, damaged=f"release.json: {why}",
                             who=who, engine_args=engine_args)
    seqs = item.get("max_num_seqs") or ()
    seqs = tuple(n for n in seqs if isinstance(n, int) and not isinstance(n, bool) and n > 0) \
        if isinstance(seqs, list) and len(seqs) == len(models) else ()
    return ReleaseRecord(release_id, created, image, serve, models, gates, max_num_seqs=seqs, who=who,
                         engine_args=engine_args)


def engine_args_digest(files: Any) -> str | None:
    """12 hex digits naming a release's engine arguments: the SHA-256 of its model.json files' paths and
    digests (release.json's `files`), every model's together. Two releases with the same digest give vLLM the
    same arguments, whatever else (image, config.pbtxt, placement) differs. None: release.json lists none."""
    if not isinstance(files, dict):
        return None
    named = sorted((path, sha) for path, sha in files.items()
                   if isinstance(path, str) and isinstance(sha, str) and path.endswith("/model.json"))
    if not named:
        return None
    return hashlib.sha256("".join(f"{path}={sha}\n" for path, sha in named).encode()).hexdigest()[:12]


def _serve(data: Any, host_ports: Mapping[str, int]) -> tuple[ServeRecord | None, str | None]:
    """release.json's `serve` as the record (None when absent: a release made before it was recorded), or why it
    cannot start the release."""
    if data is None:
        return None, None
    try:
        return ServeRecord.from_release(data, host_ports=host_ports), None
    except ServeRecordError as err:
        return None, printable(str(err))


def rollback_target(deployed: Deployed, to: str | None) -> ReleaseRecord:
    """The named release, or the newest one before `current` that served (passed its gate)."""
    if to:
        found = deployed.release(to)
        if found is None:
            known = ", ".join(printable(r.id) for r in deployed.releases) or "none"
            raise TritonopsError(f"no release {printable(to)} on this host (releases: {known})")
        if found.damaged:
            raise TritonopsError(f"release {printable(to)} cannot be started: its {printable(found.damaged)}")
        return found
    if deployed.current is None:
        raise TritonopsError("nothing is deployed here (no current release): nothing to roll back")
    if deployed.previous is None:
        raise TritonopsError(f"no earlier release that served before {printable(deployed.current)}: nothing to "
                             "roll back to")
    return deployed.previous


@dataclass(frozen=True)
class ListedRelease:
    """One release as `tritonops releases` shows it."""

    id: str
    created: str | None
    who: str | None
    image_id: str | None
    engine_args: str | None       # engine_args_digest
    models: tuple[str, ...]
    gate: str                     # passed, failed, not gated, damaged
    why: str | None               # the last gate's reason when it failed; why release.json is damaged
    role: str | None              # current, previous (what a rollback goes back to), or None


@dataclass(frozen=True)
class ReleaseListing:
    current: str | None
    previous: str | None
    releases: tuple[ListedRelease, ...]   # newest first


def release_listing(deployed: Deployed) -> ReleaseListing:
    """Every release kept on the host, newest first, `current` and `previous` named. Pure."""
    previous = deployed.previous
    roles = {deployed.current: "current", previous.id if previous else None: "previous"}
    listed = []
    for record in sorted(deployed.releases, key=lambda r: r.id, reverse=True):
        last = record.gates[-1] if record.gates else {}
        why = record.damaged or (printable(str(last["why"])) if record.gate == "failed" and last.get("why") else None)
        listed.append(ListedRelease(record.id, record.created, record.who, record.image_id, record.engine_args,
                                    record.models, "damaged" if record.damaged else record.gate, why,
                                    roles.get(record.id)))
    return ReleaseListing(deployed.current, previous.id if previous else None, tuple(listed))
