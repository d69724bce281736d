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


@dataclass
class Traffic:
    """What went through a transport's command channels: commands run, bytes sent (command lines and
    stdin) and received (stdout and stderr). Streams beside them (docker, SFTP) count their own."""

    commands: int = 0
    sent: int = 0
    received: int = 0

    def add(self, sent: int, received: int) -> None:
        self.commands += 1
        self.sent += sent
        self.received += received

    def __iadd__(self, other: "Traffic") -> "Traffic":
        self.commands += other.commands
        self.sent += other.sent
        self.received += other.received
        return self


class Transport(Protocol):
    name: str
    traffic: Traffic

    def run(self, command: str, *, stdin: bytes | None = None, timeout: float | None = None) -> CommandResult:
        """Run a shell command; a non-zero exit is a result, not an exception."""

    def close(self) -> None: ...


class Unreachable(Exception):
    """The host could not be reached or authenticated: the reason is the message."""


class HostKeyRefused(Unreachable):
    """The host's key is unknown or has changed; the message says what to do."""


class CommandTimeout(Exception):
    """A command ran longer than its timeout."""
