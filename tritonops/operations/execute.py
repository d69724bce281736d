"""Carry out steps over a host session (facts are read by tritonops/facts/query_program.py). The only
I/O of the operations package."""

from __future__ import annotations

import shlex
from typing import Sequence

from tritonops.errors import HostError
from tritonops.operations import host_program
from tritonops.operations.steps import MakeDir, PutFile, Remove, Rename, Run, Step, Symlink
from tritonops.transport.base import CommandResult, Transport


def run_step(transport: Transport, step: Step) -> CommandResult:
    if isinstance(step, PutFile):
        return _run(transport, host_program.argv("put", step.path, f"{step.mode:o}"), stdin=step.content,
                    timeout=600.0)
    if isinstance(step, MakeDir):
        return _run(transport, host_program.argv("mkdir", step.path, f"{step.mode:o}"))
    if isinstance(step, Symlink):
        return _run(transport, host_program.argv("symlink", step.path, step.target))
    if isinstance(step, Remove):
        return _run(transport, host_program.argv("remove", step.path, "1" if step.recursive else "0"))
    if isinstance(step, Rename):
        return _run(transport, host_program.argv("rename", step.path, step.target))
    if isinstance(step, Run):
        return _run(transport, step.argv, stdin=step.stdin, timeout=step.timeout_s)
    if hasattr(step, "run_on"):  # a step type of its own (e.g. the weights transfer) carries its executor
        return step.run_on(transport)
    raise TypeError(f"no executor for step {type(step).__name__}")


def _run(transport: Transport, argv: Sequence[str], *, stdin: bytes | None = None,
         timeout: float = 120.0) -> CommandResult:
    result = transport.run(shlex.join(argv), stdin=stdin, timeout=timeout)
    if not result.ok:
        shown = argv[3:] if len(argv) > 2 and argv[1] == "-c" else argv  # not the program's source
        raise HostError(transport.name, f"{shlex.join(shown)} exited {result.exit_code}: {result.tail(3)}")
    return result
