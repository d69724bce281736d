"""The controller's own folders for tritonops, as the XDG base directories name them: state (the audit log, kept
benches), data (aiperf's venv), cache (the probe program). An environment variable of tritonops' own names a path
outright; else $XDG_<KIND>_HOME/tritonops/..., else its default under the home folder."""

from __future__ import annotations

import os
from pathlib import Path

_KINDS = {"state": ("XDG_STATE_HOME", (".local", "state")), "data": ("XDG_DATA_HOME", (".local", "share")),
          "cache": ("XDG_CACHE_HOME", (".cache",))}


def user_path(kind: str, *parts: str, override: str | None = None) -> Path:
    """`override`: the name of the environment variable that, when set, is the answer."""
    given = os.environ.get(override) if override else None
    if given:
        return Path(given)
    variable, default = _KINDS[kind]
    base = os.environ.get(variable) or os.path.join(os.path.expanduser("~"), *default)
    return Path(base, "tritonops", *parts)
