"""Text from users, files and hosts, made safe to show on a terminal. Pure.

Host names, messages from remote commands and values from inventories can carry ANSI/OSC escape
sequences (which recolour, retitle or rewrite a terminal), other control characters and bidi
overrides (which make text read differently from what it is). `printable` removes them.
"""

from __future__ import annotations

import re
import unicodedata

_ESCAPE_SEQUENCE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])|\x9b[0-?]*[ -/]*[@-~]")
_BIDI = {"\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
         "\u200e", "\u200f", "\u061c"}


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """`text` without escape sequences, control characters or bidi controls (tabs become spaces)."""
    cleaned = _ESCAPE_SEQUENCE.sub("", str(text)).replace("\t", " ")
    return "".join(char for char in cleaned
                   if (keep_newlines and char == "\n")
                   or not (unicodedata.category(char) == "Cc" or char in _BIDI))


_NOT_SGR = re.compile(r"\x1b(?!\[[0-9;]*m)(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])?"
                      r"|\x9b[0-?]*[ -/]*[@-~]")
_CONTROL_BUT_LAYOUT = re.compile(r"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def terminal_safe(rendered: str) -> str:
    """Rendered console output with only colour (SGR) sequences, newlines and tabs left: the last
    wall, for text that reached a renderer without passing `printable`."""
    return _CONTROL_BUT_LAYOUT.sub("", _NOT_SGR.sub("", rendered))


def close_matches(word: str, candidates, n: int = 3) -> list[str]:
    """The candidates that look like a mistyped `word`, best first (for "did you mean ...?"). difflib
    is loaded here, on the error path, not by every command that might need it."""
    import difflib

    return difflib.get_close_matches(word, list(candidates), n=n, cutoff=0.6)
