"""release: a release folder on the host holding the rendered model repository and release.json.

A release is named `<created>-<digest8>`: sortable by time, and matched by the digest of what it
contains (the rendered files, the image ID, the weights manifests' digest) — so a run whose content
already has a release on the host creates nothing. The folder is written under a hidden temporary
name and renamed into place, so `releases/` never shows a half-written release. This operation never
switches `current`: the health gate does, after the new release has answered (deploy, part 2).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable

from pydantic import field_validator

from tritonops.errors import InputError, TritonopsError
from tritonops.facts.queries import DirQuery, Facts, FileQuery, Query
from tritonops.modes.choice import DEFAULT as DEFAULT_MODE
from tritonops.operations.base import Args
from tritonops.operations.steps import MakeDir, PutFile, Rename, Step
from tritonops.planning.serve_record import ServeRecord, ServeRecordError
from tritonops.values.names import safe_name

REPOSITORY_DIR = "model_repository"
RELEASE_FILE = "release.json"
GATES_KEY = "gates"  # what the rollout appends to a release.json after each gate (host_programs/release_folder.py)


class ReleaseArgs(Args):
    root: str                     # /opt/tritonops/<deployment>
    files: dict[str, str]         # model repository path -> text (e.g. chat/config.pbtxt, chat/1/model.json)
    image_id: str
    weights_manifests: list[str] = []  # the verified weights' manifest files on the host (models/<id>/...)
    created: str                  # UTC, compact: 20261201T082000Z (one value for the whole run)
    metadata: dict[str, Any] = {}  # engine plan and reasons, inventory digest, tritonops version, who

    @field_validator("root")
    @classmethod
    def _absolute(cls, root: str) -> str:
        if not posixpath.isabs(root) or ".." in root.split("/"):
            raise ValueError(f"must be an absolute path without '..', not {root!r}")
        return posixpath.normpath(root)

    @field_validator("files")
    @classmethod
    def _relative_paths(cls, files: dict[str, str]) -> dict[str, str]:
        for path in files:
            for part in path.split("/"):
                _checked(safe_name, part, "a model repository path part")
        return files

    @field_validator("created")
    @classmethod
    def _compact_time(cls, created: str) -> str:
        return _checked(safe_name, created, "release time")


def _checked(check, value, what):
    """A values.* check inside a pydantic validator: its InputError becomes the ValueError pydantic reports."""
    try:
        return check(value, what)
    except InputError as err:
        raise ValueError(err.what) from None


def weights_digest(args: ReleaseArgs, facts: Facts) -> str:
    """The weights as they are on the host: the digest of their manifests (each verified by the weights task)."""
    digest = hashlib.sha256()
    for path in sorted(args.weights_manifests):
        fact = facts.file(path)
        digest.update(f"{path}={fact.sha256 if fact.kind == 'file' else 'missing'}\n".encode())
    return digest.hexdigest()


def content_digest(args: ReleaseArgs, weights: str) -> str:
    """What makes two releases the same: files, image, weights, and where they serve: each replica's GPUs and
    ports, and the address they bind to unless it is 0.0.0.0, a pipeline's cluster (not who or when): a host put behind a balancer
    starts a new release bound privately, one without stays the release it was. A release made before replicas
    has no placement in its metadata."""
    digest = hashlib.sha256()
    placement = []
    serve = _serve_of(args.metadata)
    if serve is not None and serve.replicas:
        # where each replica was planned, not which of its two slots a rollout booted it on, nor its spare slot
        placement.append(json.dumps([r.planned().model_dump(mode="json", exclude={"standby"})
                                     for r in serve.replicas], sort_keys=True))
    if serve is not None and serve.bind not in (None, "0.0.0.0"):
        placement.append("bind " + serve.bind)
    if serve is not None and serve.frontend != DEFAULT_MODE:  # another serving mode is another release
        placement.append("frontend " + serve.frontend)
    if serve is not None and serve.cluster is not None:  # a pipeline's members, stages and addresses (not its token)
        placement.append("cluster " + json.dumps(serve.cluster.model_dump(mode="json", exclude={"token"}),
                                                 sort_keys=True))
    for part in (json.dumps(args.files, sort_keys=True), args.image_id, weights, *placement):
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(8, "big") + encoded)
    return digest.hexdigest()


def _serve_of(metadata: dict[str, Any]) -> ServeRecord | None:
    """The release's serve record, as the deploy wrote it into the metadata (None: no serve recorded)."""
    if "serve" not in metadata:
        return None
    try:
        return ServeRecord.from_release(metadata["serve"], host_ports={})
    except ServeRecordError as err:
        raise TritonopsError(f"the release's serve settings are not a serve record: {err}") from None


def release_id(args: ReleaseArgs, weights: str) -> str:
    return f"{args.created}-{content_digest(args, weights)[:8]}"


def release_json(args: ReleaseArgs, weights: str) -> str:
    body = {"id": release_id(args, weights), "created": args.created,
            "content_digest": content_digest(args, weights), "image_id": args.image_id,
            "weights_manifests": sorted(args.weights_manifests), "weights_digest": weights,
            "files": {path: hashlib.sha256(text.encode()).hexdigest() for path, text in sorted(args.files.items())},
            **args.metadata}
    return json.dumps(body, indent=2, sort_keys=False) + "\n"


def existing_release(names: Iterable[str], digest: str) -> str | None:
    """The release already holding this content, if any (the newest one)."""
    matching = sorted(name for name in names if name.endswith("-" + digest[:8]) and not name.startswith("."))
    return matching[-1] if matching else None


@dataclass(frozen=True)
class ReleaseMade:
    """What the release task learned: the id of the release it made."""

    release: str


@dataclass(frozen=True)
class ReleaseFile(PutFile):
    """A file of the new release (a PutFile), with the same file of the release that serves now: what --diff
    compares it with, so a one-value change shows as that one line and not as a whole new file."""

    diff_from: str = ""
    # a top-level key the host adds to that file once it serves (the gate records), left out of the comparison
    diff_without: str = ""


@dataclass(frozen=True)
class PublishRelease(Rename):
    """The finished release folder appearing under its id (a Rename), saying which release it made."""

    release: str = ""

    def outcome_of(self, result) -> ReleaseMade:
        return ReleaseMade(self.release)


class ReleaseOperation:
    name: ClassVar[str] = "release"
    Args: ClassVar[type[Args]] = ReleaseArgs

    def facts(self, args: ReleaseArgs) -> Iterable[Query]:
        return [DirQuery(posixpath.join(args.root, "releases")), *map(FileQuery, sorted(args.weights_manifests))]

    def steps(self, args: ReleaseArgs, facts: Facts) -> Iterable[Step]:
        releases = posixpath.join(args.root, "releases")
        weights = weights_digest(args, facts)
        if existing_release(facts.dir(releases).names, content_digest(args, weights)):
            return
        final = posixpath.join(releases, release_id(args, weights))
        partial = posixpath.join(releases, "." + release_id(args, weights) + ".partial")
        yield MakeDir(partial)
        current = posixpath.join(args.root, "current")
        for path, text in sorted(args.files.items()):
            yield ReleaseFile(posixpath.join(partial, REPOSITORY_DIR, path), text.encode(),
                              diff_from=posixpath.join(current, REPOSITORY_DIR, path))
        yield ReleaseFile(posixpath.join(partial, RELEASE_FILE), release_json(args, weights).encode(),
                          diff_from=posixpath.join(current, RELEASE_FILE), diff_without=GATES_KEY)
        yield PublishRelease(partial, final, release_id(args, weights))


release = ReleaseOperation()
