"""Running the fact program (tritonops/host_programs/fact_queries.py: python3 -c, stdlib only, nothing
installed) on a host to answer one task's queries (queries.py) in one round trip, and reading its answers
over a host session.

    python3 -c SOURCE                    stdin: JSON queries   stdout: JSON answers, one per query, in order
"""

from __future__ import annotations

import shlex
from typing import Sequence

from tritonops import host_programs
from tritonops.errors import HostError
from tritonops.facts.queries import Facts, Query, parse_answers, queries_json
from tritonops.transport.base import Transport

FACT_TIMEOUT_S = 120.0

SOURCE = host_programs.source("fact_queries")


def argv(python: str = "python3") -> tuple[str, ...]:
    return host_programs.argv("fact_queries", python=python)


def read_facts(transport: Transport, queries: Sequence[Query]) -> Facts:
    """The answers to `queries` from one run of the fact program on the host; none asked, none run."""
    if not queries:
        return Facts()
    result = transport.run(shlex.join(argv()), stdin=queries_json(list(queries)), timeout=FACT_TIMEOUT_S)
    if not result.ok:
        raise HostError(transport.name, f"the fact program exited {result.exit_code}: {result.tail(3)}")
    return parse_answers(list(queries), result.stdout)
