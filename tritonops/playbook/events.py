"""The events a run reports as it goes, on one stream: the controller's own phases (facts, plan,
lock, image, events, targets: `PhaseDone`) and the playbook's plays, batches and tasks. Data only.

Like Ansible's callbacks (TaskQueueManager.send_callback -> every plugin's v2_runner_on_*), every
event goes once to every subscriber: the report keeps the timeline, the terminal shows progress.
Events may come from worker threads (a host finishing a task); `EventStream` serializes them."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Iterable, Union

from tritonops.results import HostResult, Progress


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
class BatchDone:
    """A batch that ran to its end (its handlers too) without stopping the run."""
    play: str
    number: int  # 1-based
    of: int
    hosts: tuple[str, ...]                 # the batch's hosts still in the run (none failed or unreachable)
    results: tuple[HostResult, ...] = ()   # the batch's task and handler results, in the order they ran


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


@dataclass(frozen=True)
class PhaseDone:
    """One host's result of a phase the controller runs itself (result.task names it)."""

    result: HostResult


Event = Union[PhaseDone, PlayStarted, BatchStarted, BatchDone, TaskStarted, HostDone, Progress]  # Progress: bytes so far
OnEvent = Callable[[Event], None]


class EventStream:
    """Every event to every subscriber, in order, one event at a time."""

    def __init__(self, subscribers: Iterable[OnEvent | None] = ()):
        self._subscribers = [subscriber for subscriber in subscribers if subscriber is not None]
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            for subscriber in self._subscribers:
                subscriber(event)

    def phase(self, result: HostResult) -> None:
        self(PhaseDone(result))
