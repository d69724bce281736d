"""Names that become directories and container names on hosts: deployment, model and release names.

A small safe alphabet, like Docker's container names: it can never climb out of a directory
(`..`), start an option (`-`), hide (`.x`), or need quoting anywhere.
"""

from __future__ import annotations

import re
from typing import Any

from tritonops.errors import InputError

MAX_LENGTH = 64
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def safe_name(value: Any, what: str, where: str | None = None) -> str:
    """`value` if it is a safe name; else InputError naming `what` (e.g. 'model name')."""
    text = value if isinstance(value, str) else None
    if text is None or not text:
        raise InputError(f"{what} must be a non-empty name, not {value!r}", where)
    if len(text) > MAX_LENGTH:
        raise InputError(f"{what} {text[:20]!r}... is longer than {MAX_LENGTH} characters", where)
    if not _SAFE_NAME.fullmatch(text) or ".." in text:
        raise InputError(f"{what} {text!r} is not allowed: use letters, digits, '.', '_' and '-', "
                         f"starting with a letter or digit (it becomes a directory on hosts)", where)
    return text
