"""What the reading commands read on a balancer: HAProxy's `show stat` (and for metrics its request log), through
the runtime program over the balancer's SSH session (balancer.runtime_program), as typed rows. An HAProxy that does not answer is a
RuntimeApiError: that balancer's one-line result."""

from __future__ import annotations

import shlex

from tritonops.door.request_log import LoggedRequest, parse_request_log, show_events
from tritonops.door.runtime import StatRow, parse_stat, show_stat
from tritonops.door.runtime_program import read_send, send_argv
from tritonops.transport.sessions import HostSession

RUNTIME_TIMEOUT_S = 30


def door_rows(session: HostSession) -> tuple[StatRow, ...]:
    answer = session.transport.run(shlex.join(send_argv([show_stat()])), timeout=RUNTIME_TIMEOUT_S)
    return parse_stat(read_send(answer.exit_code, answer.stdout, answer.stderr)[0].text)


def door_rows_and_log(session: HostSession) -> tuple[tuple[StatRow, ...], tuple[LoggedRequest, ...]]:
    """`show stat` and the doors' request log, in one trip."""
    answer = session.transport.run(shlex.join(send_argv([show_stat(), show_events()])), timeout=RUNTIME_TIMEOUT_S)
    stat, events = read_send(answer.exit_code, answer.stdout, answer.stderr)
    return parse_stat(stat.text), parse_request_log(events.text)
