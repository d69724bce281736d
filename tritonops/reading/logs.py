"""`tritonops logs`: each selected host's Triton container logs, read on the host through its SSH
session (`docker logs` as an argument list), in parallel; `follow` asks again every second for what
came since. A host where that fails gets its one-line problem; the others go on."""

from __future__ import annotations

import shlex
import time
from typing import Callable, Iterator

from tritonops.logs.reading import LogLine, logs_argv, parse
from tritonops.planning.deployment import deployment_of
from tritonops.playbook.inputs import RunInputs
from tritonops.reading.sessions import ReadOptions, reading_pool
from tritonops.results import GroupResult, HostResult
from tritonops.transport.sessions import HostSession

POLL_S = 1.0


def read_logs(inputs: RunInputs, options: ReadOptions, *, tail: int | None, since: str | None,
              follow: bool = False, replica: int = 0, stop: Callable[[], bool] = lambda: False,
              sleep: Callable[[float], None] = time.sleep) -> Iterator[GroupResult[list[LogLine]]]:
    """Yields one GroupResult per round (one without `follow`): per host, the new lines."""
    deployments = {host.name: deployment_of(host)[1] for host in inputs.hosts}  # checked before any host is contacted
    last: dict[str, str | None] = {name: None for name in deployments}

    def phase(session: HostSession) -> HostResult:
        seen = last[session.name]
        argv = logs_argv(deployments[session.name], tail=None if seen else tail, since=seen or since, replica=replica)
        result = session.transport.run(shlex.join(argv), timeout=60)
        if not result.ok:
            why = (result.stderr.strip().splitlines() or [f"exit {result.exit_code}"])[-1]
            return HostResult(session.name, "failed", why[:300], [])
        lines = parse(result.stdout + result.stderr, after=seen)
        lines.sort(key=lambda line: line.received)
        if lines:
            last[session.name] = lines[-1].received
        return HostResult(session.name, "ok", f"{len(lines)} line(s)", lines)

    with reading_pool(inputs, options) as pool:
        yield pool.run(phase, task="logs")
        while follow and not stop():
            sleep(POLL_S)
            yield pool.run(phase, list(name for name in deployments if name not in pool.unreachable), task="logs")
