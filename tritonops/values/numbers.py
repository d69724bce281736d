"""Numbers from files and flags: finite, in range, whole where a whole number is meant."""

from __future__ import annotations

import math
from typing import Any

from tritonops.errors import InputError

_BIG = 2**53  # past this a float no longer holds every whole number; no size we read is near it


def whole_number(value: Any, field: str, where: str | None = None, *, minimum: int = 1,
                 maximum: int = _BIG) -> int:
    """An int (or an integral float/str such as 4.0 or "4") within [minimum, maximum]."""
    number = _as_number(value, field, where)
    if number != int(number):
        raise InputError(f"{field} must be a whole number, not {value!r}", where)
    return _in_range(int(number), value, field, where, minimum, maximum)


def real_number(value: Any, field: str, where: str | None = None, *, minimum: float = 0.0,
                maximum: float = float(_BIG), above_minimum: bool = True) -> float:
    """A finite number within (minimum, maximum] (or [minimum, maximum] when above_minimum is False)."""
    number = float(_as_number(value, field, where))
    if number < minimum or (above_minimum and number == minimum):
        bound = f"more than {minimum:g}" if above_minimum else f"at least {minimum:g}"
        raise InputError(f"{field} must be {bound}, not {value!r}", where)
    if number > maximum:
        raise InputError(f"{field} must be at most {maximum:g}, not {value!r}", where)
    return number


def _as_number(value: Any, field: str, where: str | None) -> float | int:
    if isinstance(value, bool) or value is None:
        raise InputError(f"{field} must be a number, not {value!r}", where)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise InputError(f"{field} must be a number, not {_short(value)!r}", where) from None
    if not isinstance(value, (int, float)):
        raise InputError(f"{field} must be a number, not {_short(value)!r}", where)
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{field} must be a finite number, not {value!r}", where)
    if isinstance(value, int) and abs(value) > 2**63:
        raise InputError(f"{field} is out of range ({_short(value)})", where)
    return value


def _in_range(number: int, given: Any, field: str, where: str | None, minimum: int, maximum: int) -> int:
    if number < minimum:
        raise InputError(f"{field} must be at least {minimum}, not {_short(given)!r}", where)
    if number > maximum:
        raise InputError(f"{field} must be at most {maximum}, not {_short(given)!r}", where)
    return number


def _short(value: Any) -> Any:
    text = str(value)
    return value if len(text) <= 40 else text[:37] + "..."
