"""Reading what planning needs from outside: the model specs the hosts use (config.json, safetensors
headers, catalog or Hub) and the controller folders their weights come from (manifest digests).
The only I/O of planning; a model or folder that cannot be read is an error for the hosts using it."""

from __future__ import annotations

import os
from collections.abc import Iterable

from tritonops.errors import TritonopsError
from tritonops.planning.entries import model_entries
from tritonops.planning.weights_spec import ControllerFolders, local_path
from tritonops.sizing.model_spec import ModelSpec


def model_refs(hosts: Iterable, default_model: str | None, default_name: str = "vllm_model") -> set[str]:
    """Every model reference the hosts' entries name (hosts whose variables are wrong are left
    out here; `plan_hosts` reports them)."""
    refs: set[str] = set()
    for host in hosts:
        try:
            refs.update(e.model_ref for e in model_entries(host, default_model, default_name))
        except TritonopsError:
            continue
    return refs


def load_models(refs: Iterable[str]) -> tuple[dict[str, ModelSpec], dict[str, str]]:
    """(spec by reference, why a reference could not be read)."""
    from tritonops.sizing.model_source import load_model_spec

    models, errors = {}, {}
    for ref in sorted(set(refs)):
        try:
            models[ref] = load_model_spec(ref)
        except TritonopsError as err:
            errors[ref] = str(err)
    return models, errors


def load_models_for(hosts: Iterable, default_model: str | None,
                    default_name: str = "vllm_model") -> tuple[dict[str, ModelSpec], dict[str, str]]:
    hosts = list(hosts)
    return load_models(model_refs(hosts, default_model, default_name))


def controller_folders(hosts: Iterable, refs: Iterable[str]) -> ControllerFolders:
    """Every model reference (`refs`: the hosts' model_refs) and tritonops_weights_path of the hosts that
    is a folder on this machine, with its manifest digest: the files are hashed here, once per run
    (weights_source.local keeps the sums)."""
    from tritonops.weights_source.local import local_manifest

    named = set(refs) | {str(host.vars["tritonops_weights_path"]) for host in hosts
                         if host.vars.get("tritonops_weights_path")}
    digests, errors = {}, {}
    for path in sorted({local_path(ref) for ref in named}):
        if not os.path.isdir(path):
            continue
        try:
            digests[path] = local_manifest(path)[0].content_sha256()
        except TritonopsError as err:
            errors[path] = str(err)
    return ControllerFolders(digests, errors)
