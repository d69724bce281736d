"""Where a `ModelSpec` comes from: a model directory, the catalog, or the Hugging Face Hub.

The only module of sizing that reads model files (through `model_files`: regular files only,
reads capped). Weight bytes are exact when the directory has safetensors files (their JSON
headers give every tensor's byte range; no tensor data is read) or a
`model.safetensors.index.json` (its `metadata.total_size`). Every number they hold is checked
before it is summed.
"""

from __future__ import annotations

import struct
from pathlib import Path

from tritonops.errors import InputError
from tritonops.sizing.model_catalog import find_catalog_model
from tritonops.sizing.model_files import parse_json, read_json_file
from tritonops.values.files import open_regular_file
from tritonops.sizing.model_spec import ModelSpec, model_spec_from_config
from tritonops.values.numbers import whole_number

_SAFETENSORS_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
                            "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
_MAX_HEADER = 100 * 1024 * 1024   # the safetensors format's own limit
_MAX_BYTES = 2**53                # no checkpoint is near 8 PiB; offsets past it are not sizes


def read_safetensors_header(path: Path) -> dict:
    """The JSON header of one .safetensors file: 8-byte little-endian length, then JSON."""
    return _read_header(path)[0]


def _read_header(path: Path) -> tuple[dict, int]:
    """(header, bytes of tensor data after it)."""
    with open_regular_file(path) as (handle, size):
        try:
            raw = handle.read(8)
            if len(raw) != 8:
                raise InputError("not a safetensors file (shorter than its 8-byte header length)", str(path))
            (length,) = struct.unpack("<Q", raw)
            if length <= 0 or length > _MAX_HEADER or length > size - 8:
                raise InputError(f"not a safetensors file (header length {length} in a file of {size} bytes)",
                                 str(path))
            text = handle.read(length)
        except OSError as err:
            raise InputError(f"cannot read safetensors header: {err.strerror or err}", str(path)) from None
    header = parse_json(text, "safetensors header", str(path))
    if not isinstance(header, dict):
        raise InputError("safetensors header is not a JSON object", str(path))
    return header, size - 8 - length


def safetensors_file_totals(path: Path) -> tuple[int, int]:
    """(bytes, parameter count) of one .safetensors file, from its header alone."""
    header, data_bytes = _read_header(path)
    return safetensors_totals(header, str(path), data_bytes)


def safetensors_totals(header: dict, where: str = "safetensors header",
                       data_bytes: int | None = None) -> tuple[int, int]:
    """(bytes, parameter count) over one header's tensors. InputError naming the tensor when its
    data_offsets, shape or dtype are not what a safetensors file holds; as the format requires,
    the tensors' byte ranges follow one another from 0 without gaps or overlaps, and end at
    `data_bytes` (the file's data after the header, when known)."""
    params = 0
    limit = _MAX_BYTES if data_bytes is None else data_bytes
    ranges: list[tuple[int, int, str]] = []
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        field = f"tensor {name[:60]!r}"
        if not isinstance(tensor, dict):
            raise InputError(f"{field} is not an object", where)
        offsets, shape = tensor.get("data_offsets"), tensor.get("shape")
        if not isinstance(offsets, list) or len(offsets) != 2:
            raise InputError(f"{field}: data_offsets must be a list [begin, end]", where)
        begin, end = (whole_number(o, f"{field} data_offsets", where, minimum=0, maximum=limit, strings=False)
                      for o in offsets)
        if end < begin:
            raise InputError(f"{field}: data_offsets end {end} is before begin {begin}", where)
        if not isinstance(shape, list):
            raise InputError(f"{field}: shape must be a list of sizes", where)
        count = 1
        for dim in shape:
            count *= whole_number(dim, f"{field} shape", where, minimum=0, maximum=_MAX_BYTES, strings=False)
            if count > _MAX_BYTES:
                raise InputError(f"{field}: shape has more than {_MAX_BYTES} elements (no checkpoint has)", where)
        dtype = tensor.get("dtype")
        width = _SAFETENSORS_DTYPE_BYTES.get(dtype) if isinstance(dtype, str) else None
        if width is not None and count * width != end - begin:
            raise InputError(f"{field}: data_offsets span {end - begin} bytes but shape x {dtype} "
                             f"is {count * width}", where)
        ranges.append((begin, end, field))
        params += count
    position = 0
    for begin, end, field in sorted(ranges):
        if begin != position:
            raise InputError(f"{field}: data_offsets begin at {begin}, not at {position} where the previous "
                             "tensor ends (a gap or an overlap)", where)
        position = end
    if data_bytes is not None and position != data_bytes:
        raise InputError(f"the tensors' data_offsets end at {position}, but the file holds {data_bytes} bytes "
                         "after the header", where)
    total_bytes = position
    return total_bytes, params


def load_model_dir(directory: Path) -> ModelSpec:
    config_path = directory / "config.json"
    if not config_path.exists():
        raise InputError("no config.json in the model directory", str(config_path))
    config = read_json_file(config_path, "config.json")

    weight_bytes = params = 0
    files = sorted(directory.glob("*.safetensors"))
    index = directory / "model.safetensors.index.json"
    for path in files:
        file_bytes, file_params = safetensors_file_totals(path)
        weight_bytes, params = weight_bytes + file_bytes, params + file_params
    if not files and index.exists():
        data = read_json_file(index, "safetensors index")
        metadata = data.get("metadata") if isinstance(data, dict) else None
        if not isinstance(metadata, dict) or metadata.get("total_size") is None:
            raise InputError("malformed safetensors index: no metadata.total_size", str(index))
        weight_bytes = whole_number(metadata["total_size"], "metadata.total_size", str(index),
                                    maximum=_MAX_BYTES, strings=False)
    quantized = isinstance(config, dict) and isinstance(config.get("quantization_config"), dict)
    return model_spec_from_config(config, name=str(directory), source=str(directory),
                                  weight_bytes=weight_bytes,
                                  # packed quantized tensors do not count parameters
                                  param_count=0 if quantized else params, where=str(config_path))


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
    except Exception as err:  # the hub raises many kinds; all mean "could not fetch"
        raise InputError(f"could not fetch config.json of '{model_id}' from the Hugging Face Hub "
                         f"({type(err).__name__}; offline?); pass a directory holding config.json or a "
                         "model from the built-in catalog (tritonops size --list-models)", "--model") from None
    return read_json_file(Path(path), "config.json")


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
    return model_spec_from_config(config, name=ref, source="Hugging Face Hub config.json",
                                  where=f"{ref}/config.json")
