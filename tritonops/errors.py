"""Typed, user-facing errors.

Every error a user can cause is a TritonopsError: one line that says where
(file:line, host) and what to do next. The CLI prints it without a traceback.
"""

from __future__ import annotations

import unicodedata

from tritonops.exit_codes import ExitCode


def one_line(text: str) -> str:
    """`text` with newlines and other control characters written as escapes (\\n, \\x1b): an error
    quoting a hostile value stays one line and cannot drive a terminal, yet still shows the value."""
    return "".join(char.encode("unicode_escape").decode("ascii") if unicodedata.category(char) == "Cc" else char
                   for char in text)


class TritonopsError(Exception):
    """An error the user can act on. `exit_code` is what the CLI returns (tritonops/exit_codes.py)."""

    exit_code: int = ExitCode.ERROR


class InputError(TritonopsError):
    """Bad input in a file or an argument; `where` is 'file:line' or an option name."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, what: str, where: str | None = None):
        self.what = one_line(str(what))
        self.where = one_line(str(where)) if where is not None else None
        super().__init__(f"{self.where}: {self.what}" if self.where else self.what)


class NotYetAvailable(TritonopsError):
    """A command that a later release of tritonops provides."""


class HostError(TritonopsError):
    """Something went wrong on one host; the message names the host."""

    exit_code = ExitCode.HOST_FAILED

    def __init__(self, host: str, what: str):
        self.host = host
        self.what = what
        super().__init__(f"{host}: {what}")
