"""Operations by the name a task uses (`- name: ...\n  put_file: {...}`)."""

from __future__ import annotations


from tritonops.errors import InputError
from tritonops.operations.base import Operation
from tritonops.text import close_matches

OPERATIONS: dict[str, Operation] = {}


def register(operation: Operation) -> Operation:
    OPERATIONS[operation.name] = operation
    return operation


def operation_named(name: str, where: str | None = None) -> Operation:
    _load_builtin()
    if name not in OPERATIONS:
        close = close_matches(name, list(OPERATIONS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(sorted(OPERATIONS))}"
        raise InputError(f"unknown operation '{name}'{hint}", where)
    return OPERATIONS[name]


def _load_builtin() -> None:
    from tritonops.operations import files, release, image, serve  # noqa: F401 - each module registers its operations
    from tritonops.weights import operation as _weights  # noqa: F401 - registers model_weights
