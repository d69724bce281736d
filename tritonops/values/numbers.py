"""Numbers from files and flags: finite, in range, whole where a whole number is meant."""

from __future__ import annotations

import math
import reprlib
from typing import Any

from tritonops.errors import InputError

_BIG = 2**53  # past this a float no longer holds every whole number; no size we read is near it


def whole_number(value: Any, field: str, where: str | None = None, *, minimum: int = 1,
                 maximum: int = _BIG, strings: bool = True) -> int:
    """An int (or an integral float/str such as 4.0 or "4") within [minimum, maximum].

    `strings=False` for typed files (JSON): there "4" is a string, not a number."""
    number = _as_number(value, field, where, strings)
    if isinstance(number, float):
        if number != int(number):
            raise InputError(f"{field} must be a whole number, not {_shown(value)}", where)
        number = int(number)
    return _in_range(number, value, field, where, minimum, maximum)


def real_number(value: Any, field: str, where: str | None = None, *, minimum: float = 0.0,
                maximum: float = float(_BIG), above_minimum: bool = True, strings: bool = True) -> float:
    """A finite number within (minimum, maximum] (or [minimum, maximum] when above_minimum is False)."""
    number = _as_number(value, field, where, strings)
    # compared before float(): an int too large for a float is simply too large
    if number < minimum or (above_minimum and number == minimum):
        bound = f"more than {minimum:g}" if above_minimum else f"at least {minimum:g}"
        raise InputError(f"{field} must be {bound}, not {_shown(value)}", where)
    if number > maximum:
        raise InputError(f"{field} must be at most {maximum:g}, not {_shown(value)}", where)
    return float(number)


def _as_number(value: Any, field: str, where: str | None, strings: bool) -> float | int:
    if isinstance(value, bool) or value is None:
        raise InputError(f"{field} must be a number, not {_shown(value)}", where)
    if isinstance(value, str) and strings:
        text = value.strip()
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                raise InputError(f"{field} must be a number, not {_shown(value)}", where) from None
    if not isinstance(value, (int, float)):
        raise InputError(f"{field} must be a number, not {_shown(value)}", where)
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{field} must be a finite number, not {_shown(value)}", where)
    return value


def _in_range(number: int, given: Any, field: str, where: str | None, minimum: int, maximum: int) -> int:
    if number < minimum:
        raise InputError(f"{field} must be at least {minimum}, not {_shown(given)}", where)
    if number > maximum:
        raise InputError(f"{field} must be at most {maximum}, not {_shown(given)}", where)
    return number


def _shown(value: Any) -> str:
    """The value as a message shows it: bounded, whatever a file held."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"a {value.bit_length()}-bit integer"
    if isinstance(value, str):
        text = repr(value[:40])
    else:
        text = repr(value) if isinstance(value, (int, float)) else reprlib.repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
