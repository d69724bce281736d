"""Strict keys: every mapping a playbook holds is checked against the keys it may have."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from tritonops.errors import InputError
from tritonops.inventory.known_vars import check_known
from tritonops.inventory.model import Setting
from tritonops.inventory.yaml_lines import LinedMap, load_yaml_file
from tritonops.playbook.model import PlaybookError


def at(shown: str, mapping: LinedMap, key: object | None = None) -> str:
    """file:line of `key` in `mapping` (of the mapping itself when no key)."""
    line = mapping.line_of(key) if key is not None else mapping.line
    return f"{shown}:{line}"


def check_keys(mapping: LinedMap, allowed: Iterable[str], shown: str, what: str) -> None:
    allowed = list(allowed)
    for key in mapping:
        if key not in allowed:
            raise PlaybookError(f"unknown key '{key}' in {what}{did_you_mean(str(key), allowed)}",
                                at(shown, mapping, key))


def did_you_mean(name: str, known: Iterable[str]) -> str:
    known = list(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if close:
        return f"; did you mean {' or '.join(close)}?"
    return f"; known: {', '.join(sorted(known))}" if known else ""


def string_list(value: object, where: str, what: str) -> tuple[str, ...]:
    """A string or a list of strings (a comma-separated string for tags, as Ansible allows)."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip()) if what == "tags" else (value,)
    if isinstance(value, list) and all(isinstance(item, (str, int)) and not isinstance(item, bool) for item in value):
        return tuple(str(item) for item in value)
    raise PlaybookError(f"{what} must be a string or a list of strings, not {value!r}", where)


def check_known_vars(settings: dict[str, Setting]) -> None:
    """A misspelt tritonops_* variable in a playbook or role is a playbook mistake (exit 5)."""
    try:
        check_known(settings.items())
    except InputError as err:
        raise PlaybookError(err.what, err.where) from None


def load_yaml(path: str, shown: str) -> object:
    """A playbook's or role's YAML file, parsed with line numbers; its mistakes are playbook mistakes."""
    try:
        return load_yaml_file(path, shown)
    except PlaybookError:
        raise
    except InputError as err:
        raise PlaybookError(err.what, err.where) from None
