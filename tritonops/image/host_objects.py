"""The host's containers and images as `tritonops prune` decides from them: `read_docker_objects` runs the program
(host_programs/docker_objects.py; its whole output, however many objects the host has), `parse_docker_objects` is
its pure parser into planning/prune.py's shapes, which names the vllm_env images: those tritonops built (the
content label) or tagged (`tritonserver:vllm_env[-…]`)."""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from tritonops import host_programs
from tritonops.errors import TritonopsError
from tritonops.image.spec import LABEL_CONTENT, MOVING_TAG, REPOSITORY, split_tag
from tritonops.planning.prune import ContainerOnHost, ImageOnHost
from tritonops.text import printable
from tritonops.values.containers import LABEL_DEPLOYMENT, LABEL_RELEASE

if TYPE_CHECKING:
    from tritonops.transport.base import Transport


def read_docker_objects(transport: Transport) -> tuple[tuple[ImageOnHost, ...], tuple[ContainerOnHost, ...]]:
    """(images, containers) of the host `transport` reaches; TritonopsError when its docker does not answer."""
    result = transport.run(shlex.join(host_programs.argv("docker_objects")), timeout=240)
    if not result.ok:
        raise TritonopsError(f"cannot list the host's images and containers: {result.tail(2)}")
    return parse_docker_objects(result.stdout)


def is_vllm_env_tag(tag: str) -> bool:
    name, version = split_tag(tag)
    return name.rsplit("/", 1)[-1] == REPOSITORY and (version == MOVING_TAG or version.startswith(MOVING_TAG + "-"))


def is_moving_tag(tag: str) -> bool:
    name, version = split_tag(tag)
    return name.rsplit("/", 1)[-1] == REPOSITORY and version == MOVING_TAG


def parse_docker_objects(stdout: str) -> tuple[tuple[ImageOnHost, ...], tuple[ContainerOnHost, ...]]:
    """The program's output -> (images, containers); TritonopsError when it is not the program's."""
    try:
        data: Any = json.loads(stdout)
        images = tuple(_image(item) for item in data["images"])
        containers = tuple(_container(item) for item in data["containers"])
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise TritonopsError(f"cannot read the host's images and containers: {printable(str(err))}") from None
    return images, containers


def _image(item: dict) -> ImageOnHost:
    tags = tuple(str(t) for t in item.get("tags") or ())
    labels = item.get("labels") or {}
    return ImageOnHost(str(item["id"]), tags, LABEL_CONTENT in labels or any(map(is_vllm_env_tag, tags)),
                       any(map(is_moving_tag, tags)), int(item.get("size") or 0))


def _container(item: dict) -> ContainerOnHost:
    labels = item.get("labels") or {}
    return ContainerOnHost(str(item["name"]), str(item["image"]), bool(item["running"]),
                           labels.get(LABEL_DEPLOYMENT), labels.get(LABEL_RELEASE))
