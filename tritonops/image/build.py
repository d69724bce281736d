"""Build the committed image on one host: base + build script in a container, then `docker commit`.

Tags move only after success: the content tag once the committed image checks out, the moving
tag `tritonserver:vllm_env` last. A failed build leaves no tag behind and its container removed
(after its last lines of output were read for the error message).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from docker.errors import APIError
from requests.exceptions import ConnectionError as RequestsConnectionError, ReadTimeout

from tritonops.errors import TritonopsError
from tritonops.image import build_script
from tritonops.image.engine import EngineError, HostEngine, ImageInfo
from tritonops.image.spec import (LABEL_BASE_DIGEST, LABEL_BASE_ID, LABEL_CONTENT, MOVING_TAG, REPOSITORY,
                                  ImageConfig, ImageSpec)

BUILD_TIMEOUT_S = 3600
LOG_TAIL_LINES = 30


class BuildFailed(TritonopsError):
    """The build container failed; the message carries the last lines of its output."""


@dataclass(frozen=True)
class BuildOutcome:
    spec: ImageSpec
    image: ImageInfo
    built: bool
    elapsed_s: float


def resolve_base(engine: HostEngine, config: ImageConfig) -> ImageInfo:
    """The base image on this host, pulled if missing."""
    base = engine.image(config.image)
    if base is None:
        try:
            base = engine.pull(config.image)
        except EngineError as exc:
            raise BuildFailed(f"{engine.name}: base image {config.image} is not on the host and "
                              f"could not be pulled: {exc}") from exc
    return base


def spec_for(config: ImageConfig, base: ImageInfo) -> ImageSpec:
    digest = base.repo_digests[0].split("@", 1)[1] if base.repo_digests else None
    return ImageSpec(config, base.id, build_script.backend_code_sha(), digest)


def existing(engine: HostEngine, spec: ImageSpec) -> ImageInfo | None:
    """The image carrying this spec's content tag, if its label agrees (a tag alone can lie)."""
    info = engine.image(spec.content_tag)
    if info is not None and info.labels.get(LABEL_CONTENT) == spec.content_hash:
        return info
    return None


def held(engine: HostEngine, config: ImageConfig) -> tuple[ImageSpec, ImageInfo] | None:
    """The image the host's moving tag points at, when it was built from `config` and today's backend code: its
    labels name the base it was built from, and its content hash must come out of them (a tag alone can lie).
    What a host outside the build host's reach runs without the build host being asked."""
    info = engine.image(f"{REPOSITORY}:{MOVING_TAG}")
    if info is None or not info.labels.get(LABEL_BASE_ID):
        return None
    digest = info.labels.get(LABEL_BASE_DIGEST)
    spec = ImageSpec(config, info.labels[LABEL_BASE_ID], build_script.backend_code_sha(),
                     None if digest == info.labels[LABEL_BASE_ID] else digest)
    if info.labels.get(LABEL_CONTENT) != spec.content_hash:
        return None
    return spec, info


def build(engine: HostEngine, spec: ImageSpec, base: ImageInfo, *, timeout_s: float = BUILD_TIMEOUT_S,
          move_tag: bool = True) -> BuildOutcome:
    started = time.monotonic()
    found = existing(engine, spec)
    if found is not None:
        if move_tag and engine.tag_id(spec.moving_tag) != found.id:
            engine.tag(found.id, spec.moving_tag)
        return BuildOutcome(spec, found, False, time.monotonic() - started)
    if base.entrypoint is None and not base.cmd:
        raise BuildFailed(f"{engine.name}: base image {spec.config.image} has neither ENTRYPOINT nor CMD; "
                          "tritonops cannot commit an image that keeps them")
    config = spec.config
    script = build_script.render(config.pip, config.vllm_version or "", requirements=config.requirements).encode()
    name = f"tritonops-vllm-env-build-{spec.content_hash[:12]}"
    engine.remove_container(name)  # a leftover of an interrupted run
    api = engine.api
    try:
        api.create_container(
            # The base's ENTRYPOINT stays (NGC's runs its arguments): the commit then keeps it as it was.
            base.id, command=["/bin/sh", build_script.SCRIPT_PATH], name=name,
            labels={"tritonops.vllm_env.build": spec.content_hash},
            # The host's network: a mirror the host reaches (its proxy, its loopback) is reachable.
            host_config=api.create_host_config(network_mode="host"), network_disabled=False)
        directory, _, filename = build_script.SCRIPT_PATH.rpartition("/")
        engine.put_file(name, directory, filename, script)
        api.start(name)
        try:
            code = api.wait(name, timeout=timeout_s).get("StatusCode", -1)
        except (ReadTimeout, RequestsConnectionError) as exc:
            raise BuildFailed(f"{engine.name}: the build did not finish within {timeout_s:g} s") from exc
        if code != 0:
            tail = _tail(engine, name)
            raise BuildFailed(f"{engine.name}: building {spec.content_tag} failed (exit {code}); "
                              f"last lines of pip's output:\n{tail}")
        image_id = _commit(engine, name, spec, base)
    except APIError as exc:
        raise BuildFailed(f"{engine.name}: building {spec.content_tag} failed: {exc.explanation or exc}") from exc
    finally:
        engine.remove_container(name)
    image = engine.image(image_id)
    if image is None or image.labels.get(LABEL_CONTENT) != spec.content_hash:
        raise BuildFailed(f"{engine.name}: the committed image {image_id[:19]} lacks its labels")
    if tuple(image.entrypoint or ()) != tuple(base.entrypoint or ()) or (base.cmd and image.cmd != base.cmd):
        raise BuildFailed(f"{engine.name}: the committed image changed ENTRYPOINT/CMD "
                          f"({image.entrypoint}, {image.cmd} vs {base.entrypoint}, {base.cmd})")
    engine.tag(image.id, spec.content_tag)
    if move_tag:
        engine.tag(image.id, spec.moving_tag)
    return BuildOutcome(spec, engine.image(image.id) or image, True, time.monotonic() - started)


def _commit(engine: HostEngine, container: str, spec: ImageSpec, base: ImageInfo) -> str:
    # The build container ran `/bin/sh <script>` as its CMD: give the image the base's CMD back. The
    # engine fills what a commit leaves unset from the container, so name a non-empty ENTRYPOINT too.
    changes = [f"ENTRYPOINT {json.dumps(list(base.entrypoint))}"] if base.entrypoint else []
    if base.cmd:
        changes.append(f"CMD {json.dumps(list(base.cmd))}")
    build_time = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    labels = {**base.labels, **spec.labels(build_time)}
    result = engine.api.commit(container, changes=changes, conf={"Labels": labels},
                               message=f"tritonops vllm_env {spec.content_hash[:12]}")
    return result["Id"]


def _tail(engine: HostEngine, container: str) -> str:
    try:
        raw = engine.api.logs(container, stdout=True, stderr=True, tail=LOG_TAIL_LINES)
    except APIError as exc:
        return f"(could not read the build output: {exc.explanation or exc})"
    text = raw.decode(errors="replace").rstrip()
    return "\n".join(f"  | {line}" for line in text.splitlines()[-LOG_TAIL_LINES:]) or "  | (no output)"
