"""Waiting for something to become true, with one deadline and a growing interval: the one polling
loop of tritonops (sshd answering, an engine starting, a server turning ready)."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


class GaveUp(Exception):
    """`stop` said there is no point waiting any longer (e.g. the container exited)."""


def wait_until(check: Callable[[], T | None], *, timeout_s: float, interval_s: float = 0.2,
               max_interval_s: float = 2.0, backoff: float = 1.5,
               stop: Callable[[], str | None] | None = None,
               clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> T | None:
    """The first truthy value `check()` returns, or None once `timeout_s` has passed. `check` is
    called at least once, and once more at the deadline; `stop()` returning a reason ends the wait
    early with GaveUp(reason). Intervals grow by `backoff` up to `max_interval_s`."""
    deadline = clock() + timeout_s
    interval = interval_s
    while True:
        value = check()
        if value:
            return value
        if stop is not None and (reason := stop()):
            raise GaveUp(reason)
        remaining = deadline - clock()
        if remaining <= 0:
            return None
        sleep(min(interval, remaining))
        interval = min(interval * backoff, max_interval_s)
