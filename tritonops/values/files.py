"""Files a user names (inventories, variable files, host lists, model configs): read whole, bounded.

A FIFO, a device or a directory given where a file is expected would block or never end: opened
without blocking and refused unless it is a regular file. Anything larger than the cap is refused
with the cap in the message instead of being read into memory.
"""

from __future__ import annotations

import os
import stat
from contextlib import contextmanager
from typing import BinaryIO, Iterator

from tritonops.errors import InputError

MiB = 1024 * 1024
DEFAULT_MAX_BYTES = 16 * MiB


@contextmanager
def open_regular_file(path: str | os.PathLike, where: str | None = None, *,
                      what: str = "file") -> Iterator[tuple[BinaryIO, int]]:
    """(binary file, its size); InputError unless `path` is a readable regular file. The check is made
    on the descriptor, opened non-blocking (a FIFO cannot hold the open), so nothing is swapped in between."""
    shown = where or os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise InputError(f"cannot read {what}: {err.strerror or err}", shown) from None
    except ValueError:  # a NUL byte in the name
        raise InputError(f"cannot read {what}: its name holds a NUL byte", shown) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{what} is not a regular file ({_kind(info.st_mode)})", shown)
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle, info.st_size


def read_regular_file(path: str | os.PathLike, where: str | None = None, *,
                      max_bytes: int = DEFAULT_MAX_BYTES, what: str = "file") -> bytes:
    shown = where or os.fspath(path)
    with open_regular_file(path, where, what=what) as (handle, size):
        if size > max_bytes:
            raise InputError(f"{what} is larger than {_size(max_bytes)} ({_size(size)})", shown)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"{what} is larger than {_size(max_bytes)}", shown)
    return data


def read_regular_text(path: str | os.PathLike, where: str | None = None, *,
                      max_bytes: int = DEFAULT_MAX_BYTES, what: str = "file") -> str:
    data = read_regular_file(path, where, max_bytes=max_bytes, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{what} is not UTF-8 text", where or os.fspath(path)) from None


class FileReads:
    """The bytes of every file read while one set of inputs is loaded, so that a file looked at twice (whether
    ansible-inventory must read a source, then the built-in reader) is opened once. One per load: no global."""

    def __init__(self) -> None:
        self._read: dict[str, bytes] = {}

    def file(self, path: str | os.PathLike, where: str | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES,
             what: str = "file") -> bytes:
        """read_regular_file's bytes, from the first read of the same file (its real path) when there was one."""
        key = os.path.realpath(path)
        if key not in self._read:
            self._read[key] = read_regular_file(path, where, max_bytes=max(max_bytes, DEFAULT_MAX_BYTES), what=what)
        data = self._read[key]
        if len(data) > max_bytes:
            raise InputError(f"{what} is larger than {_size(max_bytes)}", where or os.fspath(path))
        return data

    def text(self, path: str | os.PathLike, where: str | None = None, *, what: str = "file") -> str:
        try:
            return self.file(path, where, what=what).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{what} is not UTF-8 text", where or os.fspath(path)) from None


def _size(count: int) -> str:
    return f"{count / MiB:g} MiB" if count >= MiB else f"{count} bytes"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"
