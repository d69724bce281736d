"""Probe hosts: send the probe program, parse what it prints into `HostFacts` (plain dataclasses: a probe
loads no pydantic, see facts/model.py). The parser and the facts classes are loaded once a first host is
connected, while it readies the session and runs the program (SessionPool's preload), not in front of the
first connection."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from tritonops.facts import probe_payload
from tritonops.facts.defaults import DEFAULT_ROOT, PROBE_TIMEOUT_S
from tritonops.results import HostResult
from tritonops.transport.base import Transport
from tritonops.transport.pool import run_on_hosts
from tritonops.transport.spec import ConnectionSpec

if TYPE_CHECKING:
    from tritonops.facts.model import HostFacts, ProbeReport

PARSER = "tritonops.facts.probe_parse"

__all__ = ["DEFAULT_ROOT", "PROBE_TIMEOUT_S", "probe_hosts", "probe_task", "problems", "read_facts"]


def read_facts(transport: Transport, *, disk_path: str = DEFAULT_ROOT, python: str = "python3",
               timeout: float = PROBE_TIMEOUT_S) -> HostFacts:
    result = transport.run(probe_payload.command(disk_path, python), stdin=probe_payload.bundle(),
                           timeout=timeout)
    from tritonops.facts.probe_parse import ProbeOutputError, parse_probe_output

    if result.exit_code == 127:
        raise ProbeOutputError(f"{python} not found on the host: tritonops needs it to read facts")
    if not result.ok:
        raise ProbeOutputError(f"probe program failed (exit {result.exit_code}): {result.tail()}")
    return parse_probe_output(result.stdout)


def problems(facts: HostFacts) -> list[str]:
    """What makes a probed host unfit for serving, in words; empty when all is well."""
    found = []
    if facts.nvidia.error:
        found.append(facts.nvidia.error)
    for gpu in facts.nvidia.gpus:
        for error in gpu.errors:
            found.append(f"GPU {gpu.index}: {error}")
    return found


def probe_task(disk_path: str, timeout: float):
    def task(transport: Transport, spec: ConnectionSpec) -> HostResult:
        try:
            facts = read_facts(transport, disk_path=disk_path, timeout=timeout)
        except Exception as exc:
            from tritonops.facts.probe_parse import ProbeOutputError

            if not isinstance(exc, ProbeOutputError):
                raise
            return HostResult(spec.name, "failed", str(exc))
        issues = problems(facts)
        return HostResult(spec.name, "failed" if issues else "ok", "; ".join(issues), payload=facts)

    return task


def probe_hosts(specs: Sequence[ConnectionSpec], forks: int = 10, *, accept_new_host_keys: bool = False,
                disk_path: str = DEFAULT_ROOT, timeout: float = PROBE_TIMEOUT_S,
                preload: Sequence[str] = ()) -> ProbeReport:
    """`preload`: more modules the caller needs once hosts answer (what prints the report)."""
    group = run_on_hosts(specs, probe_task(disk_path, timeout), forks=forks,
                         accept_new_host_keys=accept_new_host_keys, preload=(PARSER, *preload))
    from tritonops.facts.model import HostProbe, ProbeReport

    return ProbeReport(hosts=tuple(
        HostProbe(host=r.host, status=r.status, msg=r.msg, elapsed_s=round(r.elapsed_s, 3), facts=r.payload)
        for r in group
    ))

