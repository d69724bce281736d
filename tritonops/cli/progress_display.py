"""A live display of long steps per host (rich's Progress, on stderr): each host's image build while it runs,
each image or weights stream with its bytes, total and rate. It subscribes to the `Progress` events the lower
layers emit (tritonops.results.Progress); nothing below the CLI prints. Off for --json and when stderr is not a
terminal (CI logs get the results table only)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

from tritonops.results import Progress
from tritonops.text import printable

WHAT = {"build": "building", "receive": "receiving image", "weights": "weights"}


class TransferDisplay:
    """Called with each Progress event, from any thread: one row per (host, what)."""

    def __init__(self, console):
        from rich.progress import (BarColumn, DownloadColumn, Progress as Bars, TextColumn, TimeElapsedColumn,
                                   TransferSpeedColumn)

        self.bars = Bars(TextColumn("{task.fields[host]}", style="bold"), TextColumn("{task.description}"),
                         BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeElapsedColumn(),
                         console=console, transient=False, refresh_per_second=4)
        self._rows: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> "TransferDisplay":
        self.bars.start()
        return self

    def __exit__(self, *exc) -> None:
        self.bars.stop()

    def __call__(self, event: Progress) -> None:
        key = (event.host, event.what)
        description = printable(" ".join(part for part in (WHAT.get(event.what, event.what), event.note) if part))
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                row = self._rows[key] = self.bars.add_task(description, host=printable(event.host),
                                                           total=event.total)
        fields = {"completed": event.done}
        if event.total is not None:
            fields["total"] = event.total
        if event.note:
            fields["description"] = description
        if event.finished:
            fields["total"] = event.done if event.total is None else event.total
        self.bars.update(row, **fields)

    def rows(self) -> dict[tuple[str, str], tuple[str, float, float | None]]:
        """(host, what) -> (description, bytes done, total): what the display shows, for tests."""
        tasks = {task.id: task for task in self.bars.tasks}
        return {key: (tasks[row].description, tasks[row].completed, tasks[row].total) for key, row in self._rows.items()}


@contextmanager
def live_progress(out, enabled: bool = True) -> Iterator[TransferDisplay | None]:
    """A TransferDisplay on the error console while the block runs; None when --json or stderr is no terminal."""
    if not enabled or out.json_mode or not out.err_console.is_terminal:
        yield None
        return
    with TransferDisplay(out.err_console) as display:
        yield display
