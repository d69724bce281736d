"""`tritonops image`."""

from tritonops.cli._later import register_later


def register(subparsers, common) -> None:
    register_later(subparsers, common, "image", "build and distribute the vllm_env image", "the image work is in progress")
