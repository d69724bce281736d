"""Values of a user's task that reach a host's command line (paths, owners, modes), checked where the
arguments are validated: a bad one is a one-line error at the task's file:line before any host is touched."""

from __future__ import annotations

import posixpath
import re

from tritonops.operations.files import octal_text

_ACCOUNT = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?|[0-9]{1,10})$")  # useradd's names, or a number


def host_path(value: str) -> str:
    """An absolute path on the host, without '..' parts or control characters (never an option to a program)."""
    if not isinstance(value, str) or not posixpath.isabs(value):
        raise ValueError(f"must be an absolute path on the host, not {value!r}")
    if ".." in value.split("/") or any(ord(char) < 32 for char in value):
        raise ValueError(f"must be a path without '..' parts or control characters, not {value!r}")
    return value


def optional_host_path(value: str | None) -> str | None:
    return None if value is None else host_path(value)


def account_name(value: str | int | None) -> str | None:
    """A user or group: a name as useradd accepts it, or a number."""
    if value is None:
        return None
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not _ACCOUNT.match(text):
        raise ValueError(f"must be a user or group name (or number), not {value!r}")
    return text


def octal_mode(value):
    """put_file's octal_text ('0640' quoted is octal, as chmod reads it), then a range check; None: not given.
    Symbolic modes (u+x) are not supported."""
    if value is None:
        return None
    try:
        value = octal_text(value)
    except ValueError as err:
        raise ValueError(f"{err} (e.g. '0644'); symbolic modes (u+x) are not supported") from None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0o7777:
        raise ValueError(f"mode {value!r} is not a file mode (0 to 07777)")
    return value
