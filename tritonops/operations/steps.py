"""Steps: what an operation asks to be done on a host. Data only; `execute.py` carries them out."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from tritonops.errors import TritonopsError
from tritonops.transport.base import CommandResult


@dataclass(frozen=True)
class PutFile:
    """Write `content` to `path` atomically (a temporary name in the same folder, then rename)."""

    path: str
    content: bytes = field(repr=False)
    mode: int = 0o644

    def describe(self) -> str:
        return f"put {self.path} ({len(self.content):,} bytes, mode {self.mode:o})"


@dataclass(frozen=True)
class MakeDir:
    path: str
    mode: int = 0o755

    def describe(self) -> str:
        return f"mkdir {self.path}"


@dataclass(frozen=True)
class Symlink:
    """Point `path` at `target`, replacing an existing link atomically."""

    path: str
    target: str

    def describe(self) -> str:
        return f"link {self.path} -> {self.target}"


@dataclass(frozen=True)
class Remove:
    """Remove a file, a link or (recursive=True) a directory tree under `path`."""

    path: str
    recursive: bool = False

    def describe(self) -> str:
        return f"remove {self.path}"


@dataclass(frozen=True)
class Rename:
    """Move `path` to `target` in one rename (same file system): how a finished folder appears at once."""

    path: str
    target: str

    def describe(self) -> str:
        return f"rename {self.path} -> {self.target}"


@dataclass(frozen=True)
class Run:
    """Run an argument list on the host (quoted by `shlex.join` for the remote shell, never pasted)."""

    argv: tuple[str, ...]
    stdin: bytes | None = field(default=None, repr=False)
    timeout_s: float = 600.0
    program: str | None = None  # a host program's name (argv is `python3 -c SOURCE ARGS...`): said instead of SOURCE

    def describe(self) -> str:
        if self.program is not None and len(self.argv) >= 3 and self.argv[1] == "-c":
            return shlex.join((self.argv[0], "-c", f"<host program {self.program}>", *self.argv[3:]))
        return shlex.join(self.argv)


Step = PutFile | MakeDir | Symlink | Remove | Rename | Run


@dataclass(frozen=True)
class Learned(CommandResult):
    """A step's command result with what the step learned from it, typed: parsed once where it
    arrived (the step's run_on returns it); the task's result carries it."""

    outcome: object = None


class StepFailed(TritonopsError):
    """A step that ran and did not do what it was for; `outcome` is what it learned, typed (the task's
    failed result carries it as its payload)."""

    def __init__(self, message: str, outcome: object):
        super().__init__(message)
        self.outcome = outcome
