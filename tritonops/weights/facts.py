"""What is on the host for one model: the final folder (its manifest, each file's size and SHA-256),
the staging folder, free disk, and a host path's files. A command (the FILES program's `fact`
action, JSON on stdin) plus `parse_weights_fact`, the pure parser of its output.

Hashing: a file whose size and mtime match the stamp the manifest recorded when it was verified is
taken as verified (`verify="quick"`); any other file is hashed again. `verify="full"` hashes all.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from tritonops.errors import HostError, TritonopsError
from tritonops.transport.base import Transport
from tritonops.weights_source.manifest import Manifest, manifest_from_json
from tritonops.weights.programs import files_argv


@dataclass(frozen=True)
class Layout:
    """Where one model lives on a host."""

    models_dir: str
    model_id: str

    @property
    def final(self) -> str:
        return f"{self.models_dir}/{self.model_id}"

    @property
    def staging(self) -> str:
        return f"{self.models_dir}/.{self.model_id}.partial"


@dataclass(frozen=True)
class FinalFact:
    kind: str  # missing | dir | link | other
    link_target: str | None = None
    manifest: Manifest | None = None
    manifest_error: str | None = None
    files: dict[str, tuple[int, str | None]] = field(default_factory=dict)  # manifest files: (size, sha256)


@dataclass(frozen=True)
class HostPathFact:
    kind: str
    files: dict[str, int] = field(default_factory=dict)  # rel -> size
    texts: dict[str, str] = field(default_factory=dict)  # config.json, the safetensors index
    headers: dict[str, int] = field(default_factory=dict)  # *.safetensors -> header length


@dataclass(frozen=True)
class WeightsFact:
    final: FinalFact
    staging_exists: bool = False
    staging_files: dict[str, int] = field(default_factory=dict)  # rel -> size (incl. '<name>.part')
    free_bytes: int = 0
    free_path: str = ""
    host_path: HostPathFact | None = None


def fact_query(layout: Layout, *, verify: str = "quick", host_path: str | None = None) -> bytes:
    return json.dumps({"final": layout.final, "staging": layout.staging, "free_path": layout.models_dir,
                       "verify": verify, "host_path": host_path}).encode()


def read_weights_fact(transport: Transport, layout: Layout, *, verify: str = "quick",
                      host_path: str | None = None, timeout_s: float = 3600.0) -> WeightsFact:
    result = transport.run(shlex.join(files_argv("fact")), stdin=fact_query(layout, verify=verify, host_path=host_path),
                           timeout=timeout_s)
    if not result.ok:
        raise HostError(transport.name, f"reading the weights at {layout.final} failed: {result.tail(3)}")
    return parse_weights_fact(result.stdout)


def parse_weights_fact(output: str) -> WeightsFact:
    try:
        data = json.loads(output)
    except ValueError:
        raise TritonopsError(f"the weights fact is not JSON: {output[:120]!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("final"), dict):
        raise TritonopsError("the weights fact has no 'final' object")
    staging = data.get("staging") or {}
    host = data.get("host_path")
    return WeightsFact(
        final=_final(data["final"]),
        staging_exists=bool(staging.get("exists")),
        staging_files={str(k): _int(v) for k, v in (staging.get("files") or {}).items()},
        free_bytes=_int(data.get("free_bytes")),
        free_path=str(data.get("free_path") or ""),
        host_path=None if not isinstance(host, dict) else HostPathFact(
            str(host.get("kind", "missing")), {str(k): _int(v) for k, v in (host.get("files") or {}).items()},
            {str(k): str(v) for k, v in (host.get("texts") or {}).items()},
            {str(k): _int(v) for k, v in (host.get("headers") or {}).items()}),
    )


def _final(data: dict[str, Any]) -> FinalFact:
    manifest, error = None, data.get("manifest_error")
    if data.get("manifest") is not None:
        try:
            manifest = manifest_from_json(data["manifest"])
        except TritonopsError as exc:
            error = str(exc)
    files = {}
    for rel, fact in (data.get("files") or {}).items():
        if isinstance(fact, dict):
            files[str(rel)] = (_int(fact.get("size")), fact.get("sha256") if isinstance(fact.get("sha256"), str) else None)
    return FinalFact(str(data.get("kind", "missing")), data.get("link_target"), manifest, error, files)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
