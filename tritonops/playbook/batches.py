"""`serial`: the rolling batches a play works through, exactly as Ansible cuts them.

serial is a number, a percentage of the play's hosts ("25%", at least 1), or a list of those; the
last entry repeats until every host is in a batch; 0 (or no serial) means all remaining hosts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from tritonops.playbook.model import PlaybookError

T = TypeVar("T")


def check_serial(value: Any, where: str) -> tuple[int | str, ...]:
    """serial as written -> a tuple of whole numbers and "N%" strings; empty for none."""
    if value is None:
        return ()
    entries = value if isinstance(value, list) else [value]
    if not entries:
        raise PlaybookError("serial is an empty list: give a number, a percentage or a list of them", where)
    return tuple(_entry(entry, where) for entry in entries)


def _entry(entry: Any, where: str) -> int | str:
    text = str(entry).strip() if isinstance(entry, (int, str)) and not isinstance(entry, bool) else ""
    number = text[:-1].strip() if text.endswith("%") else text
    if not number.isdigit() or not number.isascii():
        raise PlaybookError(f"serial entries are whole numbers or percentages like '25%', not {entry!r}", where)
    return f"{int(number)}%" if text.endswith("%") else int(number)


def batch_size(entry: int | str, total: int) -> int:
    if isinstance(entry, str):  # "N%": of all the play's hosts, at least one
        return int(int(entry[:-1]) / 100.0 * total) or 1
    return entry


def batch_sizes(serial: Sequence[int | str], total: int) -> list[int]:
    sizes: list[int] = []
    left = total
    entries = list(serial) or [0]
    index = 0
    while left > 0:
        size = batch_size(entries[index], total)
        size = left if size <= 0 else min(size, left)
        sizes.append(size)
        left -= size
        index = min(index + 1, len(entries) - 1)
    return sizes


def batches(items: Sequence[T], serial: Sequence[int | str]) -> list[list[T]]:
    result, start = [], 0
    for size in batch_sizes(serial, len(items)):
        result.append(list(items[start:start + size]))
        start += size
    return result
