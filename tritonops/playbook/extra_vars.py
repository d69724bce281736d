"""-e / --extra-vars: `key=value` pairs (strings, as Ansible reads them), `@file.yml` (YAML
mapping, types kept) or an inline YAML/JSON mapping `{"a": 1}`; later ones win."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

from tritonops.errors import InputError
from tritonops.inventory.draft import check_var_name
from tritonops.inventory.paths import display_path
from tritonops.inventory.yaml_lines import LinedMap, load_yaml_file, plain


def parse_extra_vars(given: Sequence[str]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for text in given:
        merged.update(_one(text))
    return merged


def _one(text: str) -> dict[str, Any]:
    stripped = text.strip()
    if stripped.startswith("@"):
        path = stripped[1:]
        shown = display_path(path)
        data = load_yaml_file(path, shown)
        if data is None:
            return {}
        if not isinstance(data, LinedMap):
            raise InputError("an extra-vars file must be a mapping of name: value", f"{shown}:1")
        for name in data:
            check_var_name(name, f"{shown}:{data.line_of(name)}")
        return plain(data)
    if stripped.startswith("{"):
        try:  # JSON first, as Ansible does: YAML reads an escaped "\ud83d\ude00" as two lone surrogates
            data = json.loads(stripped)
        except (ValueError, RecursionError):
            try:
                data = yaml.safe_load(stripped)
            except yaml.YAMLError as err:
                raise InputError(f"-e {_short(stripped)}: not a YAML/JSON mapping: {err}", "-e") from None
        if not isinstance(data, dict):
            raise InputError(f"-e {_short(stripped)}: not a mapping", "-e")
        for name in data:
            check_var_name(name, "-e")
        return data
    values = {}
    for pair in _pairs(text):
        name, sep, value = pair.partition("=")
        if not sep:
            raise InputError(f"-e {_short(pair)}: write name=value, @file.yml or a {{...}} mapping", "-e")
        check_var_name(name, "-e")
        values[name] = value
    return values


def _pairs(text: str) -> list[str]:
    """Space-separated name=value pairs; quotes group a value with spaces (as Ansible's -e does)."""
    import shlex

    try:
        return shlex.split(text) or [text]
    except ValueError as err:
        raise InputError(f"-e {_short(text)}: {err}", "-e") from None


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")
