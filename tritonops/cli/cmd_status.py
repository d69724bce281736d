"""`tritonops status`."""

from tritonops.cli._later import register_later


def register(subparsers, common) -> None:
    register_later(subparsers, common, "status", "what is deployed where, and whether it is healthy", "comes with deploy")
