"""`tritonops rollback`."""

from tritonops.cli._later import register_later


def register(subparsers, common) -> None:
    register_later(subparsers, common, "rollback", "return hosts to the previous release", "comes with deploy")
