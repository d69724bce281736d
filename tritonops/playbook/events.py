"""Progress events a run reports as it goes, for a live display. Data only; the CLI renders them.

The callback may be called from worker threads (a host finishing a task); calls are serialized."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from tritonops.results import HostResult


@dataclass(frozen=True)
class PlayStarted:
    play: str
    hosts: tuple[str, ...]
    check: bool


@dataclass(frozen=True)
class BatchStarted:
    play: str
    number: int  # 1-based
    of: int
    hosts: tuple[str, ...]


@dataclass(frozen=True)
class TaskStarted:
    play: str
    task: str
    hosts: tuple[str, ...]
    handler: bool = False


@dataclass(frozen=True)
class HostDone:
    play: str
    result: HostResult


Event = Union[PlayStarted, BatchStarted, TaskStarted, HostDone]
OnEvent = Callable[[Event], None]
