"""Run one task on many hosts with bounded parallelism; every host gets a result.

Like fabric's GroupResult: a dead host becomes an `unreachable` result, an
exception in the task a `failed` one; neither stops nor hides the others.
"""

from __future__ import annotations

import time
from dataclasses import replace
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from tritonops.results import GroupResult, HostResult
from tritonops.transport.base import CommandTimeout, Transport, Unreachable
from tritonops.transport.local import LocalTransport
from tritonops.transport.spec import ConnectionSpec
from tritonops.errors import TritonopsError
from tritonops.text import printable

Task = Callable[[Transport, ConnectionSpec], HostResult]


def open_transport(spec: ConnectionSpec, *, accept_new_host_keys: bool = False) -> Transport:
    if spec.local:
        return LocalTransport(spec.name)
    from tritonops.transport.ssh import SshTransport  # paramiko is only needed for remote hosts

    return SshTransport.open(spec, accept_new_host_keys=accept_new_host_keys)


def _run_one(spec: ConnectionSpec, task: Task, accept_new_host_keys: bool) -> HostResult:
    started = time.monotonic()

    def result(status: str, msg: str) -> HostResult:
        return HostResult(spec.name, status, one_line(msg), elapsed_s=time.monotonic() - started)

    try:
        transport = open_transport(spec, accept_new_host_keys=accept_new_host_keys)
    except Unreachable as exc:
        return result("unreachable", str(exc))
    except Exception as exc:  # a missing proxy program, a bad key file, a library's surprise: this host only
        return result("unreachable", f"cannot connect to {spec.label}: {_described(exc)}")
    try:
        outcome = task(transport, spec)
    except Unreachable as exc:
        return result("unreachable", str(exc))
    except (CommandTimeout, TritonopsError) as exc:
        return result("failed", str(exc))
    except Exception as exc:  # a bug or an unexpected host: report it on that host only
        return result("failed", _described(exc))
    finally:
        try:
            transport.close()
        except Exception:  # closing a half-dead session must not turn a result into a crash
            pass
    return replace(outcome, elapsed_s=time.monotonic() - started)


def one_line(text: str) -> str:
    """A message as one line: later lines joined with ' | ', control characters dropped."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return printable(" | ".join(lines))


def _described(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def run_on_hosts(specs: Sequence[ConnectionSpec], task: Task, *, forks: int = 10,
                 accept_new_host_keys: bool = False) -> GroupResult:
    if forks < 1:
        raise TritonopsError(f"--forks must be at least 1 (got {forks})")
    if not specs:
        return GroupResult()
    with ThreadPoolExecutor(max_workers=min(forks, len(specs)), thread_name_prefix="host") as pool:
        futures = [pool.submit(_run_one, spec, task, accept_new_host_keys) for spec in specs]
        return GroupResult.of(future.result() for future in futures)
