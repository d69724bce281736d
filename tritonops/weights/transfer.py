"""The weights steps: data with `describe()` and `run_on(transport)` (execute.run_step calls it).

Every value reaches the host as a separate, shlex-quoted argument or inside JSON on stdin; the
token only inside that JSON. `describe()` and `repr()` never show it (token.Secret).
"""

from __future__ import annotations

import json
import posixpath
import shlex
from dataclasses import dataclass, field
from typing import Callable, Literal

from tritonops.errors import HostError
from tritonops.operations.steps import Learned
from tritonops.results import Progress
from tritonops.transport.base import CommandResult, Transport
from tritonops.weights import programs
from tritonops.weights_source.manifest import Manifest
from tritonops.weights_source.source import Source
from tritonops.weights.token import Secret, read_token

CHUNK = 1 << 20
PASS_ENV = ("HF_ENDPOINT", "MODELSCOPE_DOMAIN", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy",
            "http_proxy", "no_proxy")


class WeightsError(HostError):
    """A weights step failed on a host; the message says what to do."""


class NotEnoughDisk(WeightsError):
    """Refused before any byte moved."""


@dataclass(frozen=True)
class Runner:
    """Where the hub library runs on the host: its own python3, or a container of `image` (the
    committed vllm_env image has huggingface_hub, as vLLM needs it) on the host's network with the
    models folder mounted at the same path."""

    kind: Literal["host", "image"] = "image"
    image: str = "tritonserver:vllm_env"
    python: str = "python3"

    def argv(self, models_dir: str, program: str) -> tuple[str, ...]:
        if self.kind == "host":
            return (self.python, "-c", program)
        env = tuple(arg for name in PASS_ENV for arg in ("-e", name))  # passed on only where the host sets them
        return ("docker", "run", "--rm", "-i", "--network", "host", "-v", f"{models_dir}:{models_dir}", *env,
                "--entrypoint", self.python, self.image, "-c", program)

    def where(self) -> str:
        return f"the host's {self.python}" if self.kind == "host" else f"image {self.image}"


@dataclass(frozen=True)
class WeightsMoved:
    """What a weights step learned: the bytes it moved to the host (0 for a check or a rename)."""

    bytes: int


def _result(step, stdout: dict) -> Learned:
    return Learned(step.describe(), 0, json.dumps(stdout), "", WeightsMoved(int(stdout.get("bytes") or 0)))


def _files(transport: Transport, action: str, *values: str, stdin: dict | None = None,
           timeout: float = 600.0) -> CommandResult:
    result = transport.run(shlex.join(programs.files_argv(action, *values)),
                           stdin=None if stdin is None else json.dumps(stdin).encode(), timeout=timeout)
    if not result.ok and result.exit_code != programs.EXIT_MISMATCH:
        raise WeightsError(transport.name, f"weights {action} {shlex.join(values)} exited {result.exit_code}: "
                                           f"{result.tail(3)}")
    return result


def _last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}


@dataclass(frozen=True)
class Reopen:
    """A final folder that failed verification becomes the staging folder (its good files are kept)."""

    final: str
    staging: str

    def describe(self) -> str:
        return f"reopen {self.final} as {self.staging}"

    def run_on(self, transport: Transport) -> CommandResult:
        _files(transport, "reopen", self.final, self.staging)
        return _result(self, {"bytes": 0})


@dataclass(frozen=True)
class RemovePath:
    path: str

    def describe(self) -> str:
        return f"remove {self.path}"

    def run_on(self, transport: Transport) -> CommandResult:
        _files(transport, "remove", self.path)
        return _result(self, {"bytes": 0})


@dataclass(frozen=True)
class Discard:
    """Files in the staging folder that cannot be kept (failed verification, wrong size)."""

    staging: str
    paths: tuple[str, ...]

    def describe(self) -> str:
        return f"discard {len(self.paths)} file(s) in {self.staging}: {', '.join(self.paths[:3])}"

    def run_on(self, transport: Transport) -> CommandResult:
        _files(transport, "discard", stdin={"staging": self.staging, "paths": list(self.paths)})
        return _result(self, {"bytes": 0})


@dataclass(frozen=True)
class Finalize:
    """Hash every staged file against the manifest, write it last, rename staging -> final."""

    staging: str
    final: str
    manifest: Manifest = field(repr=False)

    def describe(self) -> str:
        return f"verify {len(self.manifest.files)} file(s) ({self.manifest.total_size:,} bytes) and rename " \
               f"{self.staging} -> {self.final}"

    def run_on(self, transport: Transport) -> CommandResult:
        finalize(transport, self.staging, self.final, self.manifest)
        return _result(self, {"bytes": 0})


def finalize(transport: Transport, staging: str, final: str, manifest: Manifest) -> None:
    result = _files(transport, "finalize", stdin={"staging": staging, "final": final, "manifest": manifest.to_json()},
                    timeout=7200.0)
    if result.exit_code == programs.EXIT_MISMATCH:
        bad = _last_json(result.stdout).get("files") or []
        shown = ", ".join(f"{b.get('path')} ({b.get('problem')})" for b in bad[:3])
        raise WeightsError(transport.name, f"verification failed in {staging}: {shown}; the bad files were "
                                           "discarded, run again to fetch them")


@dataclass(frozen=True)
class LinkHostPath:
    final: str
    target: str

    def describe(self) -> str:
        return f"link {self.final} -> {self.target}"

    def run_on(self, transport: Transport) -> CommandResult:
        _files(transport, "link", self.final, self.target)
        return _result(self, {"bytes": 0})


@dataclass(frozen=True)
class PushItem:
    path: str  # relative, in the model folder
    local_path: str  # on the controller
    size: int
    offset: int = 0  # bytes of '<path>.part' already on the host: resumed from here


@dataclass(frozen=True)
class PushFiles:
    """Copy files from the controller into the staging folder over SFTP on the open SSH session:
    each to '<name>.part' (appended from its offset), renamed to '<name>' when complete."""

    staging: str
    items: tuple[PushItem, ...]

    def describe(self) -> str:
        total = sum(i.size - i.offset for i in self.items)
        resumed = sum(1 for i in self.items if i.offset)
        return f"push {len(self.items)} file(s), {total:,} bytes, into {self.staging}" + \
            (f" ({resumed} resumed)" if resumed else "")

    def run_on(self, transport: Transport) -> CommandResult:
        return self.run_with_progress(transport, None)

    def run_with_progress(self, transport: Transport, on_progress: Callable[[Progress], None] | None) -> CommandResult:
        """`on_progress` hears the bytes pushed so far of the step's total, after each chunk."""
        client = getattr(transport, "ssh_client", None)
        total = sum(i.size - i.offset for i in self.items)
        pushed = [0]
        model = posixpath.basename(self.staging.rstrip("/")).removeprefix(".").removesuffix(".partial")

        def tick(n: int) -> None:
            pushed[0] += n
            if on_progress is not None:
                on_progress(Progress(transport.name, "weights", pushed[0], total, f"pushing {model}"))

        if client is None:
            moved = _push_local(self, tick)
        else:  # with ansible_become the SFTP server runs as the become user (transport/become.py)
            moved = _push_sftp((getattr(transport, "open_sftp", None) or client.open_sftp)(), self, tick)
        return _result(self, {"bytes": moved})


def _counted(write, tick):
    """`write` telling `tick` each chunk's size (the push's progress)."""
    if tick is None:
        return write

    def counted(chunk):
        write(chunk)
        tick(len(chunk))
    return counted


def _copy(source, write, offset: int, size: int) -> int:
    source.seek(offset)
    moved = 0
    while moved < size - offset:
        chunk = source.read(min(CHUNK, size - offset - moved))
        if not chunk:
            raise OSError("the file on the controller shrank while it was being copied")
        write(chunk)
        moved += len(chunk)
    return moved


def _push_sftp(sftp, step: PushFiles, tick=None) -> int:
    moved = 0
    try:
        for item in step.items:
            target = posixpath.join(step.staging, item.path)
            _sftp_makedirs(sftp, posixpath.dirname(target))
            with open(item.local_path, "rb") as source, sftp.open(target + ".part", "ab") as out:
                out.set_pipelined(True)
                moved += _copy(source, _counted(out.write, tick), item.offset, item.size)
            sftp.posix_rename(target + ".part", target)
    finally:
        sftp.close()
    return moved


def _sftp_makedirs(sftp, path: str) -> None:
    missing = []
    while path not in ("", "/"):
        try:
            sftp.stat(path)
            break
        except FileNotFoundError:
            missing.append(path)
            path = posixpath.dirname(path)
    for folder in reversed(missing):
        sftp.mkdir(folder)


def _push_local(step: PushFiles, tick=None) -> int:
    """A local transport: the 'host' is this machine."""
    import os

    moved = 0
    for item in step.items:
        target = os.path.join(step.staging, item.path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(item.local_path, "rb") as source, open(target + ".part", "ab") as out:
            moved += _copy(source, _counted(out.write, tick), item.offset, item.size)
        os.replace(target + ".part", target)
    return moved


@dataclass(frozen=True)
class HubFetch:
    """Fetch from the hub on the host (resolving the revision there), verify, rename into place."""

    source: Source
    staging: str
    final: str
    runner: Runner
    token: Secret | None = field(default=None, repr=False)  # given, or read at run time from:
    token_env: str | None = None
    token_file: str | None = None
    endpoint: str | None = None

    def describe(self) -> str:
        where = f" via {_redact_url(self.endpoint)}" if self.endpoint else ""
        auth = ", with a token" if self.token is not None else \
            f", token from {self.token_file}" if self.token_file else \
            f", token from ${self.token_env} if set" if self.token_env else ""
        return (f"fetch {self.source.kind} {self.source.repo}@{self.source.revision}{where} with "
                f"{self.runner.where()}{auth} into {self.staging}, verify, rename to {self.final}")

    def request(self, token: Secret | None = None) -> dict:
        """The JSON the hub program reads on stdin (the token revealed only here)."""
        token = token or self.token
        return {"kind": self.source.kind, "repo": self.source.repo, "revision": self.source.revision,
                "include": list(self.source.include), "staging": self.staging, "endpoint": self.endpoint,
                "token": token.reveal() if token is not None else None}

    def argv(self) -> tuple[str, ...]:
        return self.runner.argv(posixpath.dirname(self.final), programs.HUB)

    def run_with_progress(self, transport: Transport, on_progress: Callable[[Progress], None] | None,
                          every_s: float = 2.0) -> CommandResult:
        """The download happens on the host: its staging folder's files' size is read every `every_s` on the
        same session (`find -printf %s`, another channel) and told as the bytes so far."""
        if on_progress is None:
            return self.run_on(transport)
        import threading

        def size() -> int | None:  # the files' bytes (du would count the folders' own 4 KiB too)
            got = transport.run(shlex.join(("find", self.staging, "-type", "f", "-printf", "%s\\n")), timeout=30)
            words = got.stdout.split() if got.ok else []
            return sum(int(word) for word in words if word.isdigit()) if got.ok else None

        start = size() or 0
        stop = threading.Event()
        note = f"downloading {self.source.repo}"

        def poll() -> None:
            while not stop.wait(every_s):
                now = size()
                if now is not None:
                    on_progress(Progress(transport.name, "weights", max(0, now - start), None, note))

        poller = threading.Thread(target=poll, daemon=True, name="weights-progress")
        poller.start()
        try:
            return self.run_on(transport)
        finally:
            stop.set()
            poller.join(timeout=35)

    def run_on(self, transport: Transport) -> CommandResult:
        token = self.token or read_token(self.token_env, self.token_file)
        stdin = json.dumps(self.request(token)).encode()
        result = transport.run(shlex.join(self.argv()), stdin=stdin, timeout=24 * 3600.0)
        del stdin
        answer = _last_json(result.stdout)
        if result.exit_code == programs.EXIT_NO_SPACE and answer.get("error") == "no_space":
            raise NotEnoughDisk(transport.name, f"not enough disk for {self.source.repo}: {answer['need']:,} bytes "
                                                f"to fetch, {answer['free']:,} free at {answer['path']}; "
                                                "nothing was fetched")
        if result.exit_code == programs.EXIT_NO_LIBRARY and answer.get("error") == "missing_library":
            other = "runner: image (the vllm_env image has huggingface_hub)" if self.runner.kind == "host" \
                else "runner: host with the library installed on the host"
            raise WeightsError(transport.name, f"{answer['library']} is not installed in {self.runner.where()}: "
                                               f"install it there ({answer['library']}) or use {other}")
        if not result.ok or "files" not in answer:
            detail = answer.get("detail") or answer.get("error") or result.tail(3)
            raise WeightsError(transport.name, f"fetching {self.source.repo}@{self.source.revision} with "
                                               f"{self.runner.where()} exited {result.exit_code}: {detail}")
        from tritonops.weights_source.manifest import FileEntry

        manifest = Manifest(tuple(FileEntry(f["path"], int(f["size"]), f["sha256"]) for f in answer["files"]),
                            dict(self.source.identity(), commit=answer.get("commit")))
        finalize(transport, self.staging, self.final, manifest)
        return _result(self, {"bytes": int(answer.get("bytes") or 0), "commit": answer.get("commit")})


def _redact_url(url: str) -> str:
    import re

    return re.sub(r"(://[^/:@\s]+:)[^/@\s]+@", r"\1****@", url)


TransferStep = Reopen | RemovePath | Discard | Finalize | LinkHostPath | PushFiles | HubFetch
