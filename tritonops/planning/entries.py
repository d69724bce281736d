"""Which models a host serves, from its inventory variables: a list of `ModelEntry`.

The single-model form is `tritonops_model` (or `--model`) served under `--model-name`, version 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tritonops.errors import InputError
from tritonops.values.names import safe_name

MODEL_VAR = "tritonops_model"


@dataclass(frozen=True)
class ModelEntry:
    """One Triton model name served from one model reference, in one or more versions (each
    version is one vLLM engine). `overrides` are SizingRequest fields given for this entry;
    `engine_args` extra model.json keys (checked against the vLLM version when planned)."""

    name: str
    model_ref: str
    versions: tuple[int, ...] = (1,)
    overrides: dict = field(default_factory=dict)
    engine_args: dict = field(default_factory=dict)
    label: str = MODEL_VAR          # how errors name the entry
    where: str | None = None        # file:line of the variable that set it


def host_where(host, var: str) -> str | None:
    """file:line where `host`'s winning value of `var` was set (None when not set)."""
    history = getattr(host, "history", {}) or {}
    return host.setting(var).where if var in history else None


def model_entries(host, default_model: str | None, default_name: str = "vllm_model") -> list[ModelEntry]:
    """The host's model entries; InputError (with file:line) for a bad entry. Empty when the host
    names no model and there is no default."""
    variables = host.vars
    ref = variables.get(MODEL_VAR) or default_model
    if not ref:
        return []
    where = host_where(host, MODEL_VAR) if variables.get(MODEL_VAR) else "--model"
    name = safe_name(default_name, "model name", "--model-name")
    return [ModelEntry(name=name, model_ref=str(ref), where=where)]
