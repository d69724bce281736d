"""Which models a host serves, from its inventory variables: a list of `ModelEntry`.

Two forms (not both on one host):
- single model: `tritonops_model` (or `--model`), served as `--model-name` (default vllm_model),
  version 1, with the host's `tritonops_*` overrides and `tritonops_engine_args`;
- several: `tritonops_models`, a list of entries
      - {name: chat, model: Qwen/Qwen2.5-7B-Instruct, version: 1, gpu_memory_utilization: 0.45,
         engine_args: {enable_prefix_caching: true}}
      - {name: chat, model: ./models/chat-v2, versions: [2]}
  each entry may set ENTRY_NUMBERS (over the host's tritonops_* values) and engine_args (over
  the host's tritonops_engine_args, key by key). Names go through values.names.safe_name,
  versions are whole numbers from 1; a (name, version) pair appears once. Every version of every
  entry is one vLLM engine.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any

from tritonops.errors import InputError
from tritonops.render.model_repository import MAX_VERSION
from tritonops.sizing.request_numbers import request_number
from tritonops.text import close_matches
from tritonops.values.names import safe_name
from tritonops.values.numbers import whole_number

MODEL_VAR = "tritonops_model"
MODELS_VAR = "tritonops_models"
UNCHECKED_VAR = "tritonops_engine_args_unchecked"
ENGINE_ARGS_VAR = "tritonops_engine_args"

# entry key -> SizingRequest field (checked by request_numbers, like the tritonops_* variables)
ENTRY_NUMBERS = {"gpu_memory_utilization": "gpu_memory_utilization", "max_model_len": "max_model_len",
                 "tensor_parallel_size": "tensor_parallel_size", "max_num_seqs": "max_num_seqs",
                 "swap_space_gib": "swap_space_gib"}
ENTRY_KEYS = ("name", "model", "version", "versions", "engine_args", *ENTRY_NUMBERS)

# model.json keys sizing writes or that change what it predicts: set through the variable named
SIZED_KEYS = {
    "model": "the entry's model / tritonops_model", "tensor_parallel_size": "tensor_parallel_size",
    "gpu_memory_utilization": "gpu_memory_utilization", "max_model_len": "max_model_len",
    "max_num_seqs": "max_num_seqs", "swap_space": "swap_space_gib", "kv_offloading_size": "swap_space_gib",
    "kv_offloading_backend": "swap_space_gib (tritonops writes the native backend)",
    "dtype": "--dtype", "kv_cache_dtype": "--kv-cache-dtype", "enforce_eager": "--enforce-eager",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "pipeline_parallel_size": None, "quantization": None, "cpu_offload_gb": None, "block_size": None,
    "num_gpu_blocks_override": None, "kv_cache_memory_bytes": None,
}

MAX_INSTANCES = 64          # engines on one host: one per GPU at most is sane, 64 GPUs at most
MAX_ENGINE_ARGS_BYTES = 64 * 1024
_MAX_DEPTH = 8


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
    vouched: frozenset = frozenset()  # engine-argument keys the user passes unchecked (UNCHECKED_VAR)
    # each engine argument's origin: the variable that set it and where ("-e", file:line, a role's defaults)
    arg_origins: dict = field(default_factory=dict)

    def arg_origin(self, key: str) -> tuple[str, str | None]:
        """(label, where) of the variable that gave engine argument `key`; the entry's own otherwise."""
        return self.arg_origins.get(key, (self.label, self.where))


def host_where(host, var: str) -> str | None:
    """file:line where `host`'s winning value of `var` was set (None when not set)."""
    history = getattr(host, "history", {}) or {}
    return host.setting(var).where if var in history else None


def host_origin(host, var: str) -> str | None:
    """Where `host`'s winning value of `var` came from, as errors name it: "-e", the file:line, or the
    file:line followed by which role's defaults."""
    history = getattr(host, "history", {}) or {}
    if var not in history:
        return None
    setting = host.setting(var)
    if setting.source.endswith(" defaults)") and setting.source.startswith(setting.where):
        return setting.source
    return setting.where


def model_entries(host, default_model: str | None, default_name: str = "vllm_model") -> list[ModelEntry]:
    """The host's model entries; InputError (with file:line) for a bad one. Empty when the host
    names no model and there is no default."""
    variables = host.vars
    vouched = _vouched(variables.get(UNCHECKED_VAR), host_where(host, UNCHECKED_VAR))
    args_where = host_origin(host, ENGINE_ARGS_VAR)
    host_args = engine_args(variables.get(ENGINE_ARGS_VAR), ENGINE_ARGS_VAR, args_where, vouched)
    host_origins = {key: (ENGINE_ARGS_VAR, args_where) for key in host_args}
    if variables.get(MODELS_VAR) is not None:
        where = host_where(host, MODELS_VAR)
        if variables.get(MODEL_VAR):
            raise InputError(f"set {MODEL_VAR} or {MODELS_VAR}, not both (the single-model form is "
                             f"{MODEL_VAR} with --model-name)", where)
        entries = [replace(entry, vouched=vouched,
                           arg_origins={**{key: host_origins[key] for key in entry.engine_args if key in host_origins},
                                        **entry.arg_origins})
                   for entry in _entries(variables[MODELS_VAR], host_args, where, vouched)]
    else:
        ref = variables.get(MODEL_VAR) or default_model
        if not ref:
            return []
        where = host_where(host, MODEL_VAR) if variables.get(MODEL_VAR) else "--model"
        if not isinstance(ref, str):
            raise InputError(f"{MODEL_VAR} must be a Hugging Face id or a path, not {type(ref).__name__}", where)
        name = safe_name(default_name, "model name", "--model-name")
        entries = [ModelEntry(name=name, model_ref=ref, engine_args=host_args, where=where, vouched=vouched,
                              arg_origins=host_origins)]
    return entries


def _vouched(value: Any, where: str | None) -> frozenset:
    """Keys a user knows their vLLM takes though tritonops' table does not list them (a newer vLLM,
    a fork): written to model.json unchecked, and the health gate is the check."""
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(key, str) and key for key in value):
        raise InputError(f"{UNCHECKED_VAR} must be a list of engine-argument names", where)
    return frozenset(value)


def _entries(value: Any, host_args: dict, where: str | None, vouched: frozenset) -> list[ModelEntry]:
    if not isinstance(value, list) or not value:
        raise InputError(f"{MODELS_VAR} must be a non-empty list of models ({{name: ..., model: ..., "
                         "version: 1}})", where)
    entries, seen, count = [], set(), 0
    for index, item in enumerate(value):
        entry = _entry(item, f"{MODELS_VAR}[{index}]", host_args, where, vouched)
        for version in entry.versions:
            if (entry.name, version) in seen:
                raise InputError(f"{entry.label}: model {entry.name} version {version} is already listed", where)
            seen.add((entry.name, version))
        count += len(entry.versions)
        if count > MAX_INSTANCES:
            raise InputError(f"{MODELS_VAR}: more than {MAX_INSTANCES} model versions (each is one vLLM "
                             "engine)", where)
        entries.append(entry)
    return entries


def _entry(item: Any, label: str, host_args: dict, where: str | None, vouched: frozenset) -> ModelEntry:
    if not isinstance(item, dict):
        raise InputError(f"{label} must be a mapping (name, model, version, ...), not "
                         f"{type(item).__name__}", where)
    for key in item:
        if key not in ENTRY_KEYS:
            close = close_matches(str(key), ENTRY_KEYS, n=2)
            hint = f"; did you mean {' or '.join(close)}?" if close else f"; known: {', '.join(ENTRY_KEYS)}"
            raise InputError(f"{label}: unknown key {str(key)!r}{hint}", where)
    name = safe_name(item.get("name"), f"{label}.name", where)
    ref = item.get("model")
    if not isinstance(ref, str) or not ref.strip():
        raise InputError(f"{label}.model must be a Hugging Face id or a path", where)
    if "version" in item and "versions" in item:
        raise InputError(f"{label}: give version or versions, not both", where)
    if "versions" in item:
        listed = item["versions"]
        if not isinstance(listed, list) or not listed:
            raise InputError(f"{label}.versions must be a non-empty list of whole numbers", where)
    else:
        listed = [item.get("version", 1)]
    versions = tuple(whole_number(v, f"{label}.version", where, maximum=MAX_VERSION, strings=False)
                     for v in listed)
    if len(set(versions)) != len(versions):
        raise InputError(f"{label}.versions lists a version twice", where)
    overrides = {field_name: request_number(field_name, item[key], where, name=f"{label}.{key}")
                 for key, field_name in ENTRY_NUMBERS.items() if item.get(key) is not None}
    own = engine_args(item.get("engine_args"), f"{label}.engine_args", where, vouched)
    args = {**host_args, **own}
    return ModelEntry(name=name, model_ref=ref, versions=versions, overrides=overrides, engine_args=args,
                      label=f"{label} ({name})", where=where,
                      arg_origins={key: (f"{label} ({name}).engine_args", where) for key in own})


def engine_args(value: Any, label: str, where: str | None, vouched: frozenset = frozenset()) -> dict:
    """Extra model.json keys: a mapping of names to JSON values, none that sizing owns unless the
    user vouches for it (UNCHECKED_VAR): then the value is written as given over sizing's choice
    (a context the user knows fits, say) and the health gate is the check. The model itself is
    never forced this way. Whether the vLLM version knows each key is checked when the host is
    planned (engine_arg_keys)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{label} must be a mapping of engine arguments, not {type(value).__name__}", where)
    for key, item in value.items():
        if not isinstance(key, str):
            raise InputError(f"{label}: engine argument names are strings, not {key!r}", where)
        if key in SIZED_KEYS and (key == "model" or key not in vouched):
            via = SIZED_KEYS[key]
            how = f"set it through {via}" if via else "tritonops does not size it (leave it out)"
            force = "" if key == "model" else f", or list it in {UNCHECKED_VAR} to force it unchecked"
            raise InputError(f"{label}: '{key}' is chosen and checked by sizing; {how}{force}", where)
        _json_value(item, f"{label}.{key}", where, 0)
    if len(json.dumps(value)) > MAX_ENGINE_ARGS_BYTES:
        raise InputError(f"{label} is larger than {MAX_ENGINE_ARGS_BYTES // 1024} KiB as JSON", where)
    return dict(value)


def _json_value(value: Any, label: str, where: str | None, depth: int) -> None:
    """A value model.json can carry as the same JSON type (YAML dates, sets, NaN cannot)."""
    if depth > _MAX_DEPTH:
        raise InputError(f"{label} is nested deeper than {_MAX_DEPTH} levels", where)
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"{label} must be a finite number, not {value!r}", where)
        return
    if isinstance(value, list):
        for item in value:
            _json_value(item, label, where, depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InputError(f"{label}: keys must be strings, not {key!r}", where)
            _json_value(item, f"{label}.{key}", where, depth + 1)
        return
    raise InputError(f"{label} must be a JSON value (string, number, true/false, null, list or mapping), "
                     f"not {type(value).__name__}", where)
