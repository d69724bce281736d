"""What image a host should run, as pure data: inputs -> content hash -> tags and labels.

`ImageConfig` is what the inventory asks for. In `committed` mode the image is built from
`base_image` by `pip install vllm==<pin>` (with the user's mirror settings) plus the Triton vLLM
backend code; `ImageSpec` adds the one fact the hash also needs, the base image's ID on the
build host. Same spec -> same hash -> the existing `tritonserver:vllm_env-<hash12>` is reused.
The build time is a label only: it never enters the hash.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Literal

from tritonops.image import ngc

Mode = Literal["official", "committed"]
MODES = ("official", "committed")

REPOSITORY = "tritonserver"
MOVING_TAG = "vllm_env"
RECIPE_VERSION = "1"  # bump when the build script changes in a way the other inputs do not show

LABEL_PREFIX = "tritonops.vllm_env."
LABEL_CONTENT = LABEL_PREFIX + "content"
LABEL_BASE_IMAGE = LABEL_PREFIX + "base_image"
LABEL_BASE_ID = LABEL_PREFIX + "base_id"
LABEL_BASE_DIGEST = LABEL_PREFIX + "base_digest"
LABEL_VLLM = LABEL_PREFIX + "vllm_version"
LABEL_PIP_ARGS = LABEL_PREFIX + "pip_args_hash"
LABEL_TRITONOPS = LABEL_PREFIX + "tritonops_version"
LABEL_BUILD_TIME = LABEL_PREFIX + "build_time"
LABEL_RELEASE = LABEL_PREFIX + "release"


@dataclass(frozen=True)
class PipOptions:
    """How pip reaches packages: the mirror settings users already have."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    trusted_hosts: tuple[str, ...] = ()
    extra_args: tuple[str, ...] = ()
    constraints: str | None = None  # the constraints file's content, not its path

    def digest(self) -> str:
        return _digest(json.dumps(asdict(self), sort_keys=True))


@dataclass(frozen=True)
class ImageConfig:
    """The image one host should run, as the inventory describes it."""

    mode: Mode
    image: str  # committed: the base (`...:24.10-py3`); official: the image pulled (`...-vllm-python-py3`)
    vllm_version: str | None
    pip: PipOptions = field(default_factory=PipOptions)
    tritonops_version: str = ""
    build_host: str | None = None
    registry: str | None = None
    frontend: str = "kserve"  # the serving mode it is for (tritonops_frontend): the preflight checks the base has it
    requirements: tuple[str, ...] = ()  # committed: what pip installs beside vLLM (Ray on a cluster's members)

    @property
    def release(self) -> str | None:
        return ngc.release_of(self.image)

    def same_build(self, other: "ImageConfig") -> bool:
        """Whether two hosts can share one build (the build host choice aside)."""
        return (self.mode, self.image, self.vllm_version, self.pip, self.tritonops_version, self.requirements) == \
            (other.mode, other.image, other.vllm_version, other.pip, other.tritonops_version, other.requirements)


@dataclass(frozen=True)
class ImageSpec:
    """A committed image fully determined: the config plus the base image as found."""

    config: ImageConfig
    base_id: str  # sha256:... of the base image on the build host
    backend_code_sha: str  # sha256 of the Triton vLLM backend code put into the image
    base_digest: str | None = None  # the base's repo digest where the engine knows one

    @property
    def content_hash(self) -> str:
        c = self.config
        more = ("requirements", *c.requirements) if c.requirements else ()   # none: the hashes images always had
        return _digest(RECIPE_VERSION, c.mode, c.image, self.base_id, c.vllm_version or "", c.pip.digest(),
                       self.backend_code_sha, c.tritonops_version, *more)

    @property
    def content_tag(self) -> str:
        return f"{REPOSITORY}:{MOVING_TAG}-{self.content_hash[:12]}"

    @property
    def moving_tag(self) -> str:
        return f"{REPOSITORY}:{MOVING_TAG}"

    def labels(self, build_time: str) -> dict[str, str]:
        c = self.config
        return {
            LABEL_CONTENT: self.content_hash,
            LABEL_BASE_IMAGE: c.image,
            LABEL_BASE_ID: self.base_id,
            LABEL_BASE_DIGEST: self.base_digest or self.base_id,
            LABEL_VLLM: c.vllm_version or "",
            LABEL_PIP_ARGS: c.pip.digest(),
            LABEL_TRITONOPS: c.tritonops_version,
            LABEL_RELEASE: c.release or "",
            LABEL_BUILD_TIME: build_time,
        }


def split_tag(reference: str) -> tuple[str, str]:
    """'tritonserver:vllm_env-abc' -> ('tritonserver', 'vllm_env-abc'); a port colon is not a tag."""
    name, sep, tag = reference.rpartition(":")
    if not sep or "/" in tag:
        return reference, "latest"
    return name, tag


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()
