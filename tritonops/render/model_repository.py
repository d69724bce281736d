"""A Triton model repository as files: `<name>/config.pbtxt` and `<name>/<version>/model.json`
for every model a host serves (reference/triton-vllm.md 1.3-1.4). Pure; paths are relative to
the repository folder and use only safe names and whole numbers, so they never leave it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from tritonops.render.config_pbtxt import render_config_pbtxt
from tritonops.values.names import safe_name
from tritonops.values.numbers import whole_number

# Triton reads version folders as int64; a folder name stays short and plain well below that
MAX_VERSION = 2**31 - 1


@dataclass(frozen=True)
class RepositoryModel:
    """One version of one model: one vLLM engine with its model.json arguments."""

    name: str
    version: int
    model_json: dict


def model_json_text(args: dict) -> str:
    """model.json text: keys in the given order, JSON types kept (a string "false" is truthy to vLLM)."""
    return json.dumps(args, indent=2) + "\n"


def render_model_repository(models: Iterable[RepositoryModel], metrics: bool = True) -> dict[str, str]:
    """{relative path: text}, config.pbtxt before its versions, names in order. A name served in
    several versions gets a `specific` version policy so Triton loads exactly those (its default
    loads only the latest)."""
    versions: dict[str, dict[int, dict]] = {}
    for m in models:
        name = safe_name(m.name, "model name")
        version = whole_number(m.version, f"version of model {name}", maximum=MAX_VERSION, strings=False)
        if version in versions.setdefault(name, {}):
            raise ValueError(f"model {name} version {version} given twice")
        versions[name][version] = m.model_json
    files: dict[str, str] = {}
    for name in sorted(versions):
        numbers = sorted(versions[name])
        files[f"{name}/config.pbtxt"] = render_config_pbtxt(
            name, metrics=metrics, versions=tuple(numbers) if len(numbers) > 1 else None)
        for version in numbers:
            files[f"{name}/{version}/model.json"] = model_json_text(versions[name][version])
    return files
