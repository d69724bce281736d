"""Reading a Triton container's logs back on its host (`docker logs`), for `tritonops logs`. Pure:
the command, the checks of --since / --tail, and the parsing of what docker prints.

`docker logs --timestamps` prefixes each line with the time Docker received it (RFC 3339, ns);
following a host means asking again `--since` the last of those times and dropping what was seen.
Docker keeps a local copy of the logs whatever the driver (dual logging, Docker >= 20.10).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tritonops.errors import InputError
from tritonops.logs.ecs import display
from tritonops.text import printable
from tritonops.values.containers import replica_container

MAX_TAIL = 100_000
_SINCE = re.compile(r"[1-9][0-9]{0,6}(?:s|m|h)|\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:\d\d)?)?"
                    r"|\d{1,10}(?:\.\d{1,9})?")
_STAMPED = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) (.*)")


@dataclass(frozen=True)
class LogLine:
    received: str     # Docker's timestamp (RFC 3339, UTC)
    text: str         # the line as the container printed it (an ECS JSON object, or plain)

    @property
    def shown(self) -> str:
        return display(self.text)


def since_value(value: str | None) -> str | None:
    """--since: a duration (90s, 10m, 2h), a date or time (RFC 3339) or a Unix time; InputError else."""
    if value is None:
        return None
    if not _SINCE.fullmatch(value):
        raise InputError(f"--since {printable(value)!r}: give a duration (10m, 2h), an RFC 3339 time "
                         "(2026-12-01T08:00:00Z) or a Unix time")
    return value


def tail_value(value: int) -> int:
    if not 0 <= value <= MAX_TAIL:
        raise InputError(f"--tail must be from 0 to {MAX_TAIL:,}, not {value}")
    return value


def replica_value(value: int) -> int:
    if not 0 <= value <= 1023:
        raise InputError(f"--replica must be from 0 to 1023, not {value}")
    return value


def logs_argv(deployment: str, *, tail: int | None, since: str | None, replica: int = 0) -> tuple[str, ...]:
    """`docker logs` of the deployment's container; with replicas (issue #22), of replica `replica`'s."""
    argv = ["docker", "logs", "--timestamps"]
    if tail is not None:
        argv += ["--tail", str(tail)]
    if since is not None:
        argv += ["--since", since]
    return (*argv, replica_container(deployment, replica))


def parse(output: str, after: str | None = None) -> list[LogLine]:
    """docker logs --timestamps output -> lines, in order; with `after`, only lines received later."""
    lines = []
    for raw in output.splitlines():
        match = _STAMPED.fullmatch(raw)
        if not match:
            continue
        if after is not None and _key(match.group(1)) <= _key(after):
            continue
        lines.append(LogLine(match.group(1), match.group(2)))
    return lines


def _key(stamp: str) -> tuple[str, str]:
    """Docker's stamps compare as (seconds, fraction padded to ns)."""
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    return whole, fraction.ljust(9, "0")
