"""`tritonops inventory`."""

from tritonops.cli._later import register_later


def register(subparsers, common) -> None:
    register_later(subparsers, common, "inventory", "show the inventory", "in progress")
