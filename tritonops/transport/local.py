"""Run commands on this machine (`ansible_connection: local`, `probe --local`)."""

from __future__ import annotations

import subprocess

from tritonops.transport.base import CommandResult, CommandTimeout, Traffic


class LocalTransport:
    def __init__(self, name: str = "localhost"):
        self.name = name
        self.traffic = Traffic()

    def run(self, command: str, *, stdin: bytes | None = None, timeout: float | None = None) -> CommandResult:
        try:
            done = subprocess.run(["/bin/sh", "-c", command], input=stdin or b"", capture_output=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise CommandTimeout(f"command timed out after {timeout:g}s: {command[:80]}") from exc
        self.traffic.add(len(command.encode()) + len(stdin or b""), len(done.stdout) + len(done.stderr))
        return CommandResult(command, done.returncode, done.stdout.decode(errors="replace"),
                             done.stderr.decode(errors="replace"))

    def close(self) -> None:
        pass
