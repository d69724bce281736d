"""One host's Docker engine, as the image work needs it (docker SDK over the host's SSH session)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from requests.exceptions import RequestException

from tritonops.image.docker_ssh import docker_client
from tritonops.image.preflight import EngineFacts
from tritonops.image.spec import split_tag
from tritonops.transport.base import Transport
from tritonops.tarball import tar_bytes

CHUNK = 1 << 20


class EngineError(Exception):
    """The engine refused or failed an operation; the message says which and why."""


class Cancelled(Exception):
    """The run was interrupted (Ctrl-C): a stream stopped on purpose."""


@dataclass(frozen=True)
class ImageInfo:
    id: str
    tags: tuple[str, ...]
    labels: dict = field(hash=False)
    size_bytes: int
    repo_digests: tuple[str, ...] = ()
    entrypoint: tuple[str, ...] | None = None
    cmd: tuple[str, ...] | None = None
    layers: tuple[str, ...] = ()  # diff IDs, base first (RootFS.Layers)

    @classmethod
    def of(cls, attrs: dict) -> "ImageInfo":
        config = attrs.get("Config") or {}
        return cls(
            id=attrs["Id"], tags=tuple(attrs.get("RepoTags") or ()), labels=dict(config.get("Labels") or {}),
            size_bytes=int(attrs.get("Size") or 0), repo_digests=tuple(attrs.get("RepoDigests") or ()),
            entrypoint=tuple(config["Entrypoint"]) if config.get("Entrypoint") is not None else None,
            cmd=tuple(config["Cmd"]) if config.get("Cmd") is not None else None,
            layers=tuple((attrs.get("RootFS") or {}).get("Layers") or ()),
        )


def _reason(exc: Exception) -> str:
    if isinstance(exc, APIError):
        return str(exc.explanation or exc)
    return str(exc) or type(exc).__name__


class HostEngine:
    def __init__(self, name: str, transport: Transport, client: docker.DockerClient | None = None):
        self.name = name
        self.transport = transport
        self.client = client or docker_client(transport)
        self.api = self.client.api

    # ---- facts -----------------------------------------------------------------------------
    def facts(self) -> EngineFacts:
        try:
            info = self.api.info()
        except (DockerException, RequestException, OSError, EOFError) as exc:
            return EngineFacts(answering=False, error=_reason(exc))
        root = info.get("DockerRootDir") or "/var/lib/docker"
        free = None
        result = self.transport.run(f"df -Pk {_q(root)} | tail -n 1", timeout=30)
        if result.ok:
            parts = result.stdout.split()
            if len(parts) >= 4 and parts[3].isdigit():
                free = int(parts[3]) * 1024
        return EngineFacts(answering=True, version=info.get("ServerVersion"), data_root=root,
                           data_root_free_bytes=free)

    def image(self, reference: str) -> ImageInfo | None:
        try:
            return ImageInfo.of(self.api.inspect_image(reference))
        except (ImageNotFound, NotFound):
            return None

    def image_layers(self) -> list[tuple[str, ...]]:
        """Each image's layers (diff IDs, base first): what a stream to this host may leave out."""
        stacks = []
        for image_id in self.api.images(quiet=True):
            info = self.image(image_id)
            if info is not None and info.layers:
                stacks.append(info.layers)
        return stacks

    def tag_id(self, reference: str) -> str | None:
        info = self.image(reference)
        return info.id if info else None

    # ---- changes ---------------------------------------------------------------------------
    def pull(self, reference: str) -> ImageInfo:
        repository, tag = split_tag(reference)
        try:
            for _ in self.api.pull(repository, tag=tag, stream=True, decode=True):
                pass
        except (APIError, DockerException) as exc:
            raise EngineError(f"docker pull {reference} failed: {_reason(exc)}") from exc
        info = self.image(reference)
        if info is None:
            raise EngineError(f"docker pull {reference} ended without the image")
        return info

    def tag(self, image_id: str, reference: str) -> None:
        repository, tag = split_tag(reference)
        try:
            self.api.tag(image_id, repository, tag, force=True)
        except APIError as exc:
            raise EngineError(f"docker tag {image_id[:19]} {reference} failed: {_reason(exc)}") from exc

    def remove_container(self, name_or_id: str) -> None:
        try:
            self.api.remove_container(name_or_id, force=True, v=True)
        except NotFound:
            pass

    def put_file(self, container: str, directory: str, name: str, data: bytes, mode: int = 0o755) -> None:
        self.api.put_archive(container, directory, tar_bytes([(name, data, mode)]))

    # ---- streams ---------------------------------------------------------------------------
    def save(self, image_id: str) -> Iterator[bytes]:
        """`docker save <id>` as a stream of chunks (by ID: the tar carries no tags)."""
        return self.api.get_image(image_id, chunk_size=CHUNK)

    def load(self, chunks: Iterable[bytes]) -> list[str]:
        """`docker load` from a stream; returns the image IDs the engine reports loaded."""
        loaded, errors = [], []
        for entry in self.api.load_image(chunks, quiet=True):  # the engine's progress, as JSON objects
            if not isinstance(entry, dict):
                continue
            if entry.get("error") or (entry.get("message") and "stream" not in entry):  # a refusal's body
                errors.append(entry.get("error") or entry["message"])
            text = entry.get("stream", "")
            if "Loaded image ID:" in text:
                loaded.append(text.split("Loaded image ID:", 1)[1].strip())
            elif "Loaded image:" in text:
                loaded.append(text.split("Loaded image:", 1)[1].strip())
        if errors:
            raise EngineError(f"docker load failed: {'; '.join(errors)}")
        return loaded

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # closing is best effort; the SSH session is closed by its owner
            pass


class ByteCounter:
    """Bytes passed through a stream; thread-safe, shared by a run's streams. `listener(target, so_far)` hears
    each target's running total as it grows (a live progress display)."""

    def __init__(self, listener: Callable[[str, int], None] | None = None):
        self._lock = threading.Lock()
        self.by_target: dict[str, int] = {}
        self.listener = listener

    def add(self, target: str, n: int) -> None:
        with self._lock:
            so_far = self.by_target[target] = self.by_target.get(target, 0) + n
        if self.listener is not None:
            self.listener(target, so_far)

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self.by_target.values())


StreamFilter = Callable[[str, Iterator[bytes]], Iterator[bytes]]


def counted(chunks: Iterable[bytes], target: str, counter: ByteCounter, cancel: threading.Event) -> Iterator[bytes]:
    for chunk in chunks:
        if cancel.is_set():
            raise Cancelled("interrupted")
        counter.add(target, len(chunk))
        yield chunk


def _q(text: str) -> str:
    import shlex

    return shlex.quote(text)
