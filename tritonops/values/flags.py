"""A yes/no variable as Ansible reads one (`true`, `yes`, `on`, `1`, `y` and their opposites, any case). Pure."""

from __future__ import annotations

from typing import Any

from tritonops.errors import InputError

TRUE = ("true", "yes", "on", "1", "y")
FALSE = ("false", "no", "off", "0", "n", "")


def flag(value: Any, field: str, where: str | None) -> bool:
    """`value` as true or false; InputError naming `field` and `where` it was set for anything else."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, (str, int)) else None
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise InputError(f"{field} must be true or false, not {str(value)[:40]!r}", where)
