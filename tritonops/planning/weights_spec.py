"""Which weights each model of a host's plan needs, as `model_weights` task arguments, and where they
will be on the host (what model.json names). Pure: host variables and the model reference in.

A model reference that is a folder on the controller is pushed over SFTP (`controller_dir`); any
other reference is a Hugging Face repo, unless `tritonops_weights_source` says otherwise. Host
variables (`tritonops_weights_*`, `tritonops_hf_*`) apply to every model of the host.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from typing import Any, Mapping

from tritonops.errors import TritonopsError
from tritonops.weights_source import source as sources

# host variable -> model_weights argument (hub sources)
_ARGUMENTS = {
    "tritonops_weights_revision": "revision",
    "tritonops_hf_token_env": "token_env",
    "tritonops_hf_token_file": "token_file",
    "tritonops_hf_endpoint": "endpoint",
    "tritonops_weights_runner": "runner",
}


@dataclass(frozen=True)
class ControllerFolders:
    """The model folders on the controller that a run names, by absolute path, with their manifest's
    digest (a controller folder's model id is named by its content) or why it could not be read.
    Read once by planning.models.controller_folders (the I/O); planning only looks things up here."""

    digests: Mapping[str, str] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)

    def has(self, reference: str) -> bool:
        key = local_path(reference)
        return key in self.digests or key in self.errors

    def sha256(self, folder: str) -> str:
        key = local_path(folder)
        if key in self.errors:
            raise TritonopsError(self.errors[key])
        if key not in self.digests:
            raise TritonopsError(f"{folder} is not a folder on the controller")
        return self.digests[key]


def local_path(reference: str) -> str:
    """A reference as a path on the controller (~ expanded, absolute): the key of ControllerFolders."""
    return os.path.abspath(os.path.expanduser(reference))


@dataclass(frozen=True)
class WeightsSpec:
    args: dict[str, Any]   # the model_weights task's arguments
    model_id: str          # the folder under <root>/<deployment>/models/
    folder: str            # where the weights are on the host (and in the Triton container)
    manifest: str          # their manifest, named by the release


def weights_spec(model_ref: str, variables: Mapping[str, Any], *, root: str, deployment: str,
                 folders: ControllerFolders) -> WeightsSpec:
    """`folders`: what the run read of the controller's folders: whether the reference is one, and a
    folder's manifest digest (a controller folder's model id needs it)."""
    kind = variables.get("tritonops_weights_source") or (
        "controller_dir" if folders.has(model_ref) else "huggingface")
    args: dict[str, Any] = {"source": kind, "deployment": deployment, "root": root}
    if kind in ("huggingface", "modelscope"):
        args["repo"] = variables.get("tritonops_weights_repo") or model_ref
        for variable, argument in _ARGUMENTS.items():
            if variables.get(variable) not in (None, ""):
                args[argument] = variables[variable]
    else:  # a folder: on the host, or on the controller (pushed over SFTP)
        args["path"] = variables.get("tritonops_weights_path") or (
            local_path(model_ref) if kind == "controller_dir" else model_ref)
    source = sources.source_of(kind, repo=args.get("repo"), revision_=args.get("revision"), path=args.get("path"))
    model_id = source.model_id(folders.sha256(args["path"]) if kind == "controller_dir" else None)
    folder = posixpath.join(root, deployment, "models", model_id)
    return WeightsSpec(args, model_id, folder, posixpath.join(folder, ".tritonops-manifest.json"))
