"""Probe hosts: send the probe program, parse what it prints into `HostFacts`.

`probe_hosts` loads the parser (pydantic and the facts model, ~0.15 s) in a thread of its own while
the hosts are being dialled, so it does not wait in front of the network. Python runs one thread at
a time: that thread first loads what the dialling needs (the SSH transport, the bundle) and only
then the parser, so the parser's load fills the time spent waiting for hosts and never delays them.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Sequence

from tritonops.facts.defaults import DEFAULT_ROOT, PROBE_TIMEOUT_S
from tritonops.results import HostResult
from tritonops.transport.base import Transport
from tritonops.transport.pool import run_on_hosts
from tritonops.transport.spec import ConnectionSpec

if TYPE_CHECKING:
    from tritonops.facts.model import HostFacts, ProbeReport

__all__ = ["DEFAULT_ROOT", "PROBE_TIMEOUT_S", "probe_hosts", "probe_task", "problems", "read_facts"]


def read_facts(transport: Transport, *, disk_path: str = DEFAULT_ROOT, python: str = "python3",
               timeout: float = PROBE_TIMEOUT_S) -> HostFacts:
    from tritonops.facts import probe_payload

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
                disk_path: str = DEFAULT_ROOT, timeout: float = PROBE_TIMEOUT_S) -> ProbeReport:
    remote = any(not spec.local for spec in specs)
    threading.Thread(target=_load_while_dialling, args=(remote,), name="probe-load", daemon=True).start()
    group = run_on_hosts(specs, probe_task(disk_path, timeout), forks=forks,
                         accept_new_host_keys=accept_new_host_keys)
    from tritonops.facts.model import HostProbe, ProbeReport

    return ProbeReport(hosts=tuple(
        HostProbe(host=r.host, status=r.status, msg=r.msg, elapsed_s=round(r.elapsed_s, 3), facts=r.payload)
        for r in group
    ))


def _load_while_dialling(remote: bool) -> None:
    """The transport and the bundle first (what a host needs to be dialled and sent the program), then
    the parser (needed once one has replied). A host that gets there first waits on the same import or
    lock; nothing is loaded or built twice. A warm-up only: whatever fails here fails again, and is
    reported, where a host needs it."""
    try:
        if remote:
            import tritonops.transport.ssh  # noqa: F401
        from tritonops.facts import probe_payload

        probe_payload.bundle()
        import tritonops.facts.probe_parse  # noqa: F401  (pydantic and the facts model)
    except Exception:  # noqa: BLE001 - see above
        return
