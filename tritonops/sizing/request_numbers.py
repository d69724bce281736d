"""The numbers of a `SizingRequest`, checked in one place whether they come from flags,
inventory variables or a caller of `size_engine`: whole where vLLM takes an int, finite,
positive, gpu_memory_utilization in (0, 1]. None stays None (chosen, or vLLM's default)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import MAX_GPUS_PER_HOST
from tritonops.sizing.pipeline import MAX_PIPELINE_HOSTS
from tritonops.values.numbers import real_number, whole_number


def _whole(value: Any, field: str, where: str | None) -> int:
    return whole_number(value, field, where)


def _ram(value: Any, field: str, where: str | None) -> int:
    return whole_number(value, field, where, minimum=0)   # 0: not known


# SizingRequest field -> its check (value, the name the user knows it by, where it was given)
CHECKS: dict[str, Callable[[Any, str, str | None], int | float]] = {
    "tensor_parallel_size": lambda v, f, w: whole_number(v, f, w, maximum=MAX_GPUS_PER_HOST),
    "pipeline_parallel_size": lambda v, f, w: whole_number(v, f, w, maximum=MAX_PIPELINE_HOSTS),
    "gpu_memory_utilization": lambda v, f, w: real_number(v, f, w, maximum=1.0),
    "max_model_len": _whole,
    "max_context": _whole,
    "max_num_seqs": _whole,
    "max_num_batched_tokens": _whole,
    "concurrency": _whole,
    "host_ram_bytes": _ram,
    # GiB per GPU; 0 turns vLLM's default swap off. 1 TiB per GPU is past any host's RAM
    "swap_space_gib": lambda v, f, w: real_number(v, f, w, maximum=1024.0, above_minimum=False),
}


# where a field comes from when it is not a flag
_GIVEN_AS = {"host_ram_bytes": "probe facts (system.ram_total_bytes)", "pipeline_parallel_size": "--nodes"}


def flag(field: str) -> str:
    return _GIVEN_AS.get(field) or "--" + field.replace("_", "-")


def request_number(field: str, value: Any, where: str | None = None, name: str | None = None) -> int | float:
    """`value` for SizingRequest.`field`, checked; the InputError says `name` (default: the field)."""
    return CHECKS[field](value, name or field, where)


def checked_request(request: SizingRequest) -> SizingRequest:
    """`request` with every given number checked; errors point at the field's flag."""
    given = {field: getattr(request, field) for field in CHECKS if getattr(request, field) is not None}
    return replace(request, **{field: request_number(field, value, flag(field)) for field, value in given.items()})
