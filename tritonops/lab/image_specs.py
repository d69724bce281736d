"""Which images the lab needs and what goes into each: pure, so the content hash is testable.

An image is rebuilt only when the hash of its inputs (recipe, Dockerfile, files copied in,
parent's hash) changes; the hash is its tag and its `tritonops.lab.inputs` label.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from importlib import resources

RECIPE_VERSION = "1"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
PYTRITON_VERSION = "0.7.0"
TRITON_TAG = "nvcr.io/nvidia/tritonserver:24.10-py3"  # tritonserver 2.51.0 = NGC 24.10

LABEL_INPUTS = "tritonops.lab.inputs"
LABEL_ROLE = "tritonops.lab.image"


def asset_text(name: str) -> str:
    return resources.files("tritonops.lab").joinpath("assets", name).read_text()


def asset_bytes(name: str) -> bytes:
    return resources.files("tritonops.lab").joinpath("assets", name).read_bytes()


def nvml_source() -> bytes:
    return resources.files("tritonops.lab").joinpath("nvml", "fake_nvml.c").read_bytes()


def digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


@dataclass(frozen=True)
class ImageSpec:
    role: str  # base | host-light | host-full | host-balancer | tritonserver | collector
    inputs_hash: str
    parent: "ImageSpec | None" = None
    dockerfile: str = ""  # asset name; empty for the debootstrapped base
    extra_tags: tuple[str, ...] = field(default=())

    @property
    def repository(self) -> str:
        return f"tritonops-lab/{self.role}"

    @property
    def tag(self) -> str:
        return f"{self.repository}:{self.inputs_hash[:12]}"

    def dockerfile_text(self) -> str:
        return asset_text(self.dockerfile).format(base=self.parent.tag if self.parent else "",
                                                  host_light=self.parent.tag if self.parent else "")

    @property
    def labels(self) -> dict[str, str]:
        return {LABEL_INPUTS: self.inputs_hash, LABEL_ROLE: self.role}


# Files copied into each image's build context (asset names; plus generated ones in images.py).
HOST_LIGHT_ASSETS = ("sshd_config.txt", "host-entrypoint.sh")
HOST_FULL_ASSETS = ("nvidia-container-runtime-hook.py.txt",)


def base_spec() -> ImageSpec:
    return ImageSpec("base", digest(RECIPE_VERSION, "debootstrap --variant=minbase", DEBIAN_SUITE, DEBIAN_MIRROR))


def host_light_spec(base: ImageSpec, pynvml_source: bytes) -> ImageSpec:
    spec = ImageSpec("host-light", "", base, "host-light.dockerfile.txt")
    inputs = digest(base.inputs_hash, spec.dockerfile_text(), nvml_source(), pynvml_source,
                    *(asset_bytes(a) for a in HOST_LIGHT_ASSETS))
    return ImageSpec("host-light", inputs, base, spec.dockerfile)


def host_full_spec(light: ImageSpec) -> ImageSpec:
    spec = ImageSpec("host-full", "", light, "host-full.dockerfile.txt")
    inputs = digest(light.inputs_hash, spec.dockerfile_text(), *(asset_bytes(a) for a in HOST_FULL_ASSETS))
    return ImageSpec("host-full", inputs, light, spec.dockerfile)


def host_balancer_spec(light: ImageSpec) -> ImageSpec:
    """A light host plus Debian's haproxy package: the front door's host (no GPU, no inner engine)."""
    spec = ImageSpec("host-balancer", "", light, "host-balancer.dockerfile.txt")
    inputs = digest(light.inputs_hash, spec.dockerfile_text())
    return ImageSpec("host-balancer", inputs, light, spec.dockerfile)


def tritonserver_spec(base: ImageSpec, wheel_sha256: str) -> ImageSpec:
    spec = ImageSpec("tritonserver", "", base, "tritonserver.dockerfile.txt")
    inputs = digest(base.inputs_hash, spec.dockerfile_text(), PYTRITON_VERSION, wheel_sha256)
    return ImageSpec("tritonserver", inputs, base, spec.dockerfile, extra_tags=(TRITON_TAG,))


COLLECTOR_ASSETS = ("collector-rsyslog.conf.txt",)


def collector_spec(base: ImageSpec) -> ImageSpec:
    spec = ImageSpec("collector", "", base, "collector.dockerfile.txt")
    inputs = digest(base.inputs_hash, spec.dockerfile_text(), *(asset_bytes(a) for a in COLLECTOR_ASSETS))
    return ImageSpec("collector", inputs, base, spec.dockerfile)
