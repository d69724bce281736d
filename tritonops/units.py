"""Byte units, for every part of tritonops. Pure. vLLM prints "GiB" (and older versions "GB" meaning GiB)."""

KIB = 1024
MIB = 1024 ** 2
GIB = 1024 ** 3


def gib(n_bytes: float, digits: int = 2) -> str:
    """`12.34 GiB`: by default the form vLLM's log lines use; `digits` 0 or 1 for a summary."""
    return f"{n_bytes / GIB:.{digits}f} GiB"


def round_down(value: int, multiple: int) -> int:
    return (value // multiple) * multiple if value > 0 else 0


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
