"""Where a `ModelSpec` comes from: a model directory, the catalog, or the Hugging Face Hub.

The only module of sizing that reads files. Weight bytes are exact when the directory has
safetensors files (their JSON headers give every tensor's byte range; no tensor data is
read) or a `model.safetensors.index.json` (its `metadata.total_size`).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from tritonops.errors import InputError
from tritonops.sizing.model_catalog import find_catalog_model
from tritonops.sizing.model_spec import ConfigError, ModelSpec, model_spec_from_config

_SAFETENSORS_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
                            "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
_MAX_HEADER = 100 * 1024 * 1024


def read_safetensors_header(path: Path) -> dict:
    """The JSON header of one .safetensors file: 8-byte little-endian length, then JSON."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(8)
            if len(raw) != 8:
                raise InputError("not a safetensors file (shorter than its 8-byte header length)", str(path))
            (length,) = struct.unpack("<Q", raw)
            if length <= 0 or length > _MAX_HEADER:
                raise InputError(f"not a safetensors file (header length {length})", str(path))
            header = json.loads(handle.read(length))
    except (OSError, ValueError, UnicodeDecodeError) as err:
        if isinstance(err, InputError):
            raise
        raise InputError(f"cannot read safetensors header: {err}", str(path)) from None
    if not isinstance(header, dict):
        raise InputError("safetensors header is not a JSON object", str(path))
    return header


def safetensors_totals(headers: list[dict]) -> tuple[int, int]:
    """(bytes, parameter count) over the tensors of these headers."""
    total_bytes = params = 0
    for header in headers:
        for name, tensor in header.items():
            if name == "__metadata__" or not isinstance(tensor, dict):
                continue
            begin, end = tensor["data_offsets"]
            total_bytes += end - begin
            count = 1
            for dim in tensor.get("shape", []):
                count *= dim
            params += count
    return total_bytes, params


def load_model_dir(directory: Path) -> ModelSpec:
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise InputError("no config.json in the model directory", str(config_path))
    try:
        config = json.loads(config_path.read_text())
    except (OSError, ValueError) as err:
        raise InputError(f"malformed config.json: {err}", str(config_path)) from None

    weight_bytes = params = 0
    files = sorted(directory.glob("*.safetensors"))
    index = directory / "model.safetensors.index.json"
    if files:
        weight_bytes, params = safetensors_totals([read_safetensors_header(f) for f in files])
    elif index.is_file():
        try:
            weight_bytes = int(json.loads(index.read_text())["metadata"]["total_size"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise InputError(f"malformed safetensors index: {err}", str(index)) from None
    quantized = isinstance(config, dict) and isinstance(config.get("quantization_config"), dict)
    try:
        return model_spec_from_config(config, name=str(directory), source=str(directory),
                                      weight_bytes=weight_bytes,
                                      # packed quantized tensors do not count parameters
                                      param_count=0 if quantized else params)
    except ConfigError as err:
        raise InputError(str(err), str(config_path)) from None


def fetch_hub_config(model_id: str) -> dict:
    """config.json from the Hugging Face Hub (nothing else is downloaded)."""
    try:
        from huggingface_hub import hf_hub_download  # optional dependency
    except ImportError:
        raise InputError(f"'{model_id}' is not a directory nor in the built-in catalog, and huggingface_hub "
                         "is not installed to fetch its config.json (pip install huggingface_hub, or pass "
                         "a directory holding config.json)", "--model") from None
    try:
        path = hf_hub_download(model_id, "config.json")
        return json.loads(Path(path).read_text())
    except Exception as err:  # the hub raises many kinds; all mean "could not fetch"
        raise InputError(f"could not fetch config.json of '{model_id}' from the Hugging Face Hub "
                         f"({type(err).__name__}; offline?); pass a directory holding config.json or a "
                         "model from the built-in catalog (tritonops size --list-models)", "--model") from None


def load_model_spec(ref: str) -> ModelSpec:
    """A directory, else a catalog id, else the Hub (config only)."""
    path = Path(ref).expanduser()
    if path.is_dir():
        return load_model_dir(path)
    if path.suffix == ".json" and path.exists():
        raise InputError("pass the model directory, not its config.json", ref)
    spec = find_catalog_model(ref)
    if spec is not None:
        return spec
    if "/" not in ref or ref.startswith((".", "/", "~")):
        raise InputError("no such model directory, and not a Hugging Face id (owner/name)", ref)
    config = fetch_hub_config(ref)
    try:
        return model_spec_from_config(config, name=ref, source="Hugging Face Hub config.json")
    except ConfigError as err:
        raise InputError(str(err), f"{ref}/config.json") from None
