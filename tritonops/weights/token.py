"""The hub token: read on the controller, held where no repr, describe() or log can show it, and
sent to the host only inside the JSON on the program's stdin (never argv, environment or title).
"""

from __future__ import annotations

import os
import re
import stat

from tritonops.errors import InputError
from tritonops.values.files import read_regular_text

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Secret:
    """A string that will not show itself: repr/str are '****'; `reveal()` is the only way out."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret(****)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", len(self._value)))

    def __reduce__(self):
        raise TypeError("a Secret is not pickled")


def env_name(value: object, where: str | None = None) -> str:
    text = value if isinstance(value, str) else ""
    if not _ENV_NAME.fullmatch(text) or len(text) > 128:
        raise InputError(f"token variable {value!r} is not an environment variable name", where)
    return text


def read_token(token_env: str | None, token_file: str | None, where: str | None = None) -> Secret | None:
    """The token from the file (which must be a regular file only its owner can read: 0600 or 0400),
    else from the environment variable; None when neither gives one."""
    if token_file:
        path = os.path.expanduser(token_file)
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError as err:
            raise InputError(f"cannot read the token file: {err.strerror or err}", where or token_file) from None
        if mode & 0o077:
            raise InputError(f"the token file is readable by others (mode {mode:o}): chmod 600 it", where or token_file)
        text = read_regular_text(path, where or token_file, max_bytes=64 * 1024, what="token file").strip()
        if not text or any(c.isspace() for c in text):
            raise InputError("the token file must hold one token on one line", where or token_file)
        return Secret(text)
    if token_env:
        value = os.environ.get(env_name(token_env, where), "").strip()
        return Secret(value) if value else None
    return None
