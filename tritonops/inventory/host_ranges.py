"""Ansible host ranges: node[01:04] -> node01..node04, rack-[a:c] -> rack-a..rack-c, [0:10:5] strides."""

from __future__ import annotations

import re
import string

from tritonops.errors import InputError

MAX_HOSTS_PER_PATTERN = 10_000  # a fleet pattern larger than this is a typo, not a fleet
_RANGE = re.compile(r"\[([^\]:]*):([^\]:]*)(?::([^\]]*))?\]")
_HOST_WITH_PORT = re.compile(r"^((?:[^:\[]|\[[^\]]*\])+):(\d+)$")


def split_host_port(pattern: str) -> tuple[str, int | None]:
    """'web1:2222' -> ('web1', 2222), as Ansible inventories allow; colons inside [a:b] are ranges."""
    match = _HOST_WITH_PORT.match(pattern)
    return (match.group(1), int(match.group(2))) if match else (pattern, None)


def expand_host_range(pattern: str, where: str) -> list[str]:
    """All host names a pattern stands for; a name without [a:b] stands for itself. At most
    MAX_HOSTS_PER_PATTERN names, counted before any is made."""
    count = _count(pattern, where)
    if count > MAX_HOSTS_PER_PATTERN:
        raise InputError(f"host range {pattern!r} stands for {count:,} hosts; at most "
                         f"{MAX_HOSTS_PER_PATTERN:,} per line", where)
    return _expand(pattern, where)


def _count(pattern: str, where: str) -> int:
    total = 1
    for match in _RANGE.finditer(pattern):
        start, end, stride = match.group(1), match.group(2), _stride(pattern, match.group(3), where)
        if _digits(start) and _digits(end):
            first, last = int(start), int(end)
            total *= max(0, (last - first) // stride + 1)
        else:
            total *= 1 + 51 // stride  # letters: at most 52
        if total > MAX_HOSTS_PER_PATTERN:
            return total
    return total


def _stride(pattern: str, text: str | None, where: str) -> int:
    try:
        stride = int(text) if text else 1
    except ValueError:
        raise InputError(f"host range {pattern!r}: stride must be a number", where) from None
    if stride < 1:
        raise InputError(f"host range {pattern!r}: stride must be at least 1", where)
    return stride


def _expand(pattern: str, where: str) -> list[str]:
    match = _RANGE.search(pattern)
    if not match:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end():]
    start, end = match.group(1), match.group(2)
    stride = _stride(pattern, match.group(3), where)
    names = []
    for item in _range_items(pattern, start, end, stride, where):
        names.extend(_expand(head + item + tail, where))
    return names


def _range_items(pattern: str, start: str, end: str, stride: int, where: str) -> list[str]:
    if _digits(start) and _digits(end):
        width = len(start) if start.startswith("0") and len(start) > 1 else 0
        first, last = int(start), int(end)
        if first > last:
            raise InputError(f"host range {pattern!r}: start is after end", where)
        return [str(number).zfill(width) for number in range(first, last + 1, stride)]
    letters = string.ascii_letters
    if len(start) == 1 and len(end) == 1 and start in letters and end in letters:
        first, last = letters.index(start), letters.index(end)
        if first > last:
            raise InputError(f"host range {pattern!r}: start is after end", where)
        return list(letters[first : last + 1 : stride])
    raise InputError(f"host range {pattern!r}: use [01:10] numbers or [a:f] single letters", where)


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()  # str.isdigit alone accepts '²' and other digits int() refuses
