"""`tritonops plan`."""

from tritonops.cli._later import register_later


def register(subparsers, common) -> None:
    register_later(subparsers, common, "plan", "the engine plan per inventory host", "sizing is in progress")
