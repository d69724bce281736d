"""Byte units. vLLM prints "GiB" (and older versions "GB" meaning GiB)."""

KIB = 1024
MIB = 1024 ** 2
GIB = 1024 ** 3


def gib(n_bytes: float) -> str:
    """`12.34 GiB`, the form vLLM's log lines use."""
    return f"{n_bytes / GIB:.2f} GiB"


def round_down(value: int, multiple: int) -> int:
    return (value // multiple) * multiple if value > 0 else 0


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
