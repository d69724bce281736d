"""`tritonops probe`."""

from tritonops.cli._later import register_later


def register(subparsers, common) -> None:
    register_later(subparsers, common, "probe", "read GPUs and host facts over SSH", "in progress")
