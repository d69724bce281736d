"""The lab's cache (built images, their saved tars, downloaded wheels) is shared by every lab on this machine, and
several labs may come up at once (the suite's workers, a helper's lab beside the suite's): what fills it does so
under one lock per kind of content, so a second lab waits for the first's build and then finds it, instead of
building the same image into the same folder at the same time."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def filling(cache_dir: Path, what: str) -> Iterator[None]:
    """Held while `what` (images, wheels...) is looked for and, when missing, made in `cache_dir`: an flock on
    `cache_dir/.what.lock`, waited for, gone with the process that holds it. Not reentrant: hold one at a time."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / f".{what}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
