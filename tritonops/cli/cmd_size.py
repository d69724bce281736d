"""`tritonops size`."""

from tritonops.cli._later import register_later


def register(subparsers, common) -> None:
    register_later(subparsers, common, "size", "choose vLLM engine settings for a model and GPUs", "sizing is in progress")
