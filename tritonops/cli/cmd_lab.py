"""`tritonops lab`."""

from tritonops.cli._later import register_later


def register(subparsers, common) -> None:
    register_later(subparsers, common, "lab", "the local lab of simulated GPU hosts", "the lab is in progress")
