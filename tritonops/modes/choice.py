"""The serving mode a name says: `tritonops_frontend` in the inventory, `serve.frontend` in release.json."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tritonops.errors import InputError
from tritonops.modes.base import ServingMode
from tritonops.modes.kserve import KSERVE
from tritonops.modes.openai import OPENAI
from tritonops.modes.vllm_server import VLLM
from tritonops.text import close_matches

MODES: dict[str, ServingMode] = {KSERVE.name: KSERVE, OPENAI.name: OPENAI, VLLM.name: VLLM}
DEFAULT = KSERVE.name
FRONTEND_VAR = "tritonops_frontend"


def serving_mode(name: Any = None, where: str | None = None) -> ServingMode:
    """The mode named `name` (None or "": the default); InputError naming `where` for any other."""
    if name is None or name == "":
        return MODES[DEFAULT]
    if isinstance(name, str) and name in MODES:
        return MODES[name]
    close = close_matches(str(name).lower(), MODES)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise InputError(f"{FRONTEND_VAR} {name!r} is not a serving mode (known: {', '.join(MODES)}){hint}", where)


def host_ports(host_vars: Mapping[str, Any]) -> dict[str, int]:
    """Each port role of every mode (http, grpc, metrics, openai) -> the host's port: its `tritonops_<role>_port`,
    else the mode's default (for a release that recorded none: one made before replicas)."""
    return {role: int(host_vars.get(f"tritonops_{role}_port", port))
            for mode in MODES.values() for role, port in mode.ports}
