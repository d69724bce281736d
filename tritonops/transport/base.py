"""What every transport offers, and the errors that mean "could not reach the host"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    command: str
    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def tail(self, lines: int = 5) -> str:
        """The last lines of stderr (else stdout): what a user needs to see of a failure."""
        text = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return "\n".join(text[-lines:])


class Transport(Protocol):
    name: str

    def run(self, command: str, *, stdin: bytes | None = None, timeout: float | None = None) -> CommandResult:
        """Run a shell command; a non-zero exit is a result, not an exception."""

    def close(self) -> None: ...


class Unreachable(Exception):
    """The host could not be reached or authenticated: the reason is the message."""


class HostKeyRefused(Unreachable):
    """The host's key is unknown or has changed; the message says what to do."""


class CommandTimeout(Exception):
    """A command ran longer than its timeout."""
