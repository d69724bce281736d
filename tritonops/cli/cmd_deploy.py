"""`tritonops deploy`."""

from tritonops.cli._later import register_later


def register(subparsers, common) -> None:
    register_later(subparsers, common, "deploy", "render, deliver and start Triton with a health gate", "the deploy work comes after sizing and the image")
