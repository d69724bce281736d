"""Where weights come from, checked where it is read, and the model id derived from it (pure).

The model id names the folder under `models/`: `Qwen--Qwen2.5-0.5B-Instruct@main`,
`Qwen--Qwen2.5-0.5B-Instruct@a09a35458c70` (a commit: its first 12 hex digits),
`modelscope.Qwen--Qwen2.5-0.5B-Instruct@master`, `local.<name>@<sha12 of the host path>` and
`<folder name>@<sha12 of the manifest>` for a controller folder (content-addressed).
Hugging Face forbids '--' in repo names, so '/' -> '--' cannot make two repos one id.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass
from typing import Literal

from tritonops.errors import InputError

Kind = Literal["huggingface", "modelscope", "host_path", "controller_dir"]
KINDS: tuple[str, ...] = ("huggingface", "modelscope", "host_path", "controller_dir")
HUB_KINDS = ("huggingface", "modelscope")

MAX_MODEL_ID = 128
_COMMIT = re.compile(r"[0-9a-f]{40}")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]*")
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(@[A-Za-z0-9][A-Za-z0-9_.-]*)?")
_HOST_PATH = re.compile(r"/[A-Za-z0-9_.@+/-]*")
_SAFE_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def repo_id(value: object, where: str | None = None) -> str:
    text = value if isinstance(value, str) else ""
    if not text or len(text) > 96 or not _REPO.fullmatch(text) or "--" in text or ".." in text:
        raise InputError(f"repo {value!r} is not a hub repo id (org/name: letters, digits, '.', '_', '-'; "
                         "no '--' or '..', at most 96 characters)", where)
    return text


def revision(value: object, where: str | None = None) -> str:
    text = value if isinstance(value, str) else ""
    if not text or len(text) > 128 or not _REVISION.fullmatch(text) or ".." in text:
        raise InputError(f"revision {value!r} is not a branch, tag or commit (letters, digits, '.', '_', '-', '/')",
                         where)
    return text


def host_path(value: object, what: str, where: str | None = None) -> str:
    """An absolute, normalised path of plain characters (it reaches a host)."""
    text = value if isinstance(value, str) else ""
    if not text or not _HOST_PATH.fullmatch(text) or posixpath.normpath(text) != text or "/../" in text + "/":
        raise InputError(f"{what} {value!r} must be an absolute, normalised path of letters, digits and "
                         "'_.@+/-'", where)
    return text


def model_id(value: object, where: str | None = None) -> str:
    text = value if isinstance(value, str) else ""
    if not text or len(text) > MAX_MODEL_ID or not _MODEL_ID.fullmatch(text) or ".." in text:
        raise InputError(f"model id {value!r} is not allowed: letters, digits, '.', '_', '-' and one '@', "
                         f"at most {MAX_MODEL_ID} characters (it becomes a folder on hosts)", where)
    return text


def is_commit(rev: str) -> bool:
    return bool(_COMMIT.fullmatch(rev))


def _safe(text: str) -> str:
    return _SAFE_CHARS.sub("-", text).strip("-.") or "model"


@dataclass(frozen=True)
class Source:
    """What to put under models/: `repo` for the hubs, `path` for a host path or controller folder."""

    kind: Kind
    repo: str | None = None
    revision: str = "main"
    path: str | None = None
    include: tuple[str, ...] = ()  # hub files to fetch (glob patterns); empty: all

    @property
    def is_hub(self) -> bool:
        return self.kind in HUB_KINDS

    def identity(self) -> dict:
        """What the manifest records of the source: a manifest for another source is not this one."""
        if self.is_hub:
            return {"kind": self.kind, "repo": self.repo, "revision": self.revision, "include": list(self.include)}
        return {"kind": self.kind, "path": self.path}

    def model_id(self, content_sha256: str | None = None) -> str:
        """The folder name under models/ (a controller folder needs its manifest's sha256)."""
        rev = self.revision[:12] if is_commit(self.revision) else _safe(self.revision.replace("/", "--"))
        if self.kind == "huggingface":
            name = f"{self.repo.replace('/', '--')}@{rev}"
        elif self.kind == "modelscope":
            name = f"modelscope.{self.repo.replace('/', '--')}@{rev}"
        elif self.kind == "host_path":
            name = f"local.{_safe(posixpath.basename(self.path))[:60]}@{hashlib.sha256(self.path.encode()).hexdigest()[:12]}"
        else:
            if content_sha256 is None:
                raise ValueError("a controller folder's model id needs its manifest's sha256")
            name = f"{_safe(posixpath.basename(self.path.rstrip('/')))[:60]}@{content_sha256[:12]}"
        if len(name) > MAX_MODEL_ID:  # a long repo and revision: keep it unique with a hash
            name = name[:MAX_MODEL_ID - 13] + "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
        return name


def source_of(kind: str, *, repo: str | None = None, revision_: str | None = None, path: str | None = None,
              include: tuple[str, ...] = (), where: str | None = None) -> Source:
    """A checked Source; InputError names what is wrong."""
    if kind not in KINDS:
        raise InputError(f"source {kind!r} is not one of {', '.join(KINDS)}", where)
    if kind in HUB_KINDS:
        if path is not None:
            raise InputError(f"a {kind} source takes 'repo', not 'path'", where)
        default = "master" if kind == "modelscope" else "main"
        for pattern in include:
            if not isinstance(pattern, str) or not pattern or "\n" in pattern or pattern.startswith("/") \
                    or ".." in pattern:
                raise InputError(f"include pattern {pattern!r} must be a relative glob", where)
        return Source(kind, repo_id(repo, where), revision(revision_ or default, where), include=tuple(include))
    if repo is not None or revision_ is not None or include:
        raise InputError(f"a {kind} source takes 'path' only", where)
    if kind == "host_path":
        return Source(kind, path=host_path(path, "host path", where))
    if not isinstance(path, str) or not path or "\x00" in path:
        raise InputError(f"controller folder {path!r} must be a path", where)
    return Source(kind, path=path)
