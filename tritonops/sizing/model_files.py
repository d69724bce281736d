"""Reading a model directory's files without trusting them.

Only regular files are read: a FIFO or a device named config.json would block or never end.
Whole files (config.json, the index) are read through `values.files`; a safetensors file is
opened here, the same way, because only its header is read. The check is made on the opened
descriptor (opened non-blocking, so a FIFO cannot hold the open itself), not on the name, so
nothing can be swapped in between. Reads are capped.
"""

from __future__ import annotations

import json
import os
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from tritonops.errors import InputError
from tritonops.sizing.units import MIB
from tritonops.values.files import read_regular_file

JSON_FILE_MAX_BYTES = 16 * MIB   # config.json and index files are kilobytes


@contextmanager
def open_regular_file(path: Path) -> Iterator[tuple[BinaryIO, int]]:
    """(binary file, its size in bytes); InputError when `path` is not a readable regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise InputError(f"cannot open: {err.strerror or err}", str(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"not a regular file ({_kind(info.st_mode)}); refusing to read it", str(path))
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle, info.st_size


def read_json_file(path: Path, what: str, limit: int = JSON_FILE_MAX_BYTES):
    """The parsed JSON of a regular file of at most `limit` bytes; InputError naming `what`."""
    return parse_json(read_regular_file(path, max_bytes=limit, what=what), what, str(path))


def parse_json(raw: bytes, what: str, where: str):
    """JSON from bytes; InputError for anything that is not (bad UTF-8, nesting too deep, ...)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as err:   # UnicodeDecodeError is a ValueError
        detail = "nested too deeply" if isinstance(err, RecursionError) else str(err).splitlines()[0][:200]
        raise InputError(f"malformed {what}: {detail}", where) from None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"
