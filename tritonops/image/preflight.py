"""Preflight: may this host receive the image? Pure: facts in, reasons out.

Checked before any byte moves: the engine answers, the driver runs the image's CUDA, a GPU
runtime is installed, the GPUs meet the release's compute capability, the release ships what the serving
mode runs (the OpenAI frontend: 24.11 on), and Docker's data root has room for twice the image (a
`docker load` holds the tar and the extracted layers at once).
"""

from __future__ import annotations

from dataclasses import dataclass

from tritonops.facts.model import HostFacts
from tritonops.image import ngc
from tritonops.modes.choice import DEFAULT as DEFAULT_MODE, serving_mode
from tritonops.units import gib

DISK_FACTOR = 2


@dataclass(frozen=True)
class EngineFacts:
    """What the host's Docker engine says about itself (beyond the probe's facts)."""

    answering: bool
    error: str | None = None
    version: str | None = None
    data_root: str | None = None  # DockerRootDir
    data_root_free_bytes: int | None = None


@dataclass(frozen=True)
class ImageNeeds:
    release: ngc.NgcRelease | None
    size_bytes: int | None  # None: not known yet (checked again when it is)
    frontend: str = DEFAULT_MODE  # the serving mode the image is for (tritonops_frontend)


@dataclass(frozen=True)
class Preflight:
    refusals: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.refusals


def check(facts: HostFacts | None, engine: EngineFacts, needs: ImageNeeds) -> Preflight:
    refusals: list[str] = []
    notes: list[str] = []
    if not engine.answering:
        refusals.append(f"the Docker engine does not answer: {engine.error or 'no reply'}")
    release = needs.release
    if facts is not None:
        nvidia = facts.nvidia
        if not nvidia.driver_version:
            refusals.append(f"no NVIDIA driver: {nvidia.error or 'the probe found none'}")
        elif release is not None:
            have = ngc.driver_tuple(nvidia.driver_version)
            floor = release.min_driver
            if have[:2] < floor:
                refusals.append(
                    f"driver {nvidia.driver_version} is too old for Triton {release.release} (CUDA {release.cuda}): "
                    f"it needs driver >= {floor[0]}; upgrade the driver or pick an older release")
        for gpu in nvidia.gpus:
            if release is not None and gpu.compute_capability < release.min_compute_capability:
                need = ".".join(map(str, release.min_compute_capability))
                refusals.append(f"GPU {gpu.index} ({gpu.name}) has compute capability {gpu.compute_capability_str}; "
                                f"Triton {release.release} needs >= {need}")
        if not (facts.docker.nvidia_runtime or facts.docker.nvidia_container_toolkit):
            refusals.append("no GPU runtime for Docker: install nvidia-container-toolkit and run "
                            "'nvidia-ctk runtime configure --runtime=docker'")
    else:
        notes.append("no host facts: driver and GPU runtime not checked")
    mode = serving_mode(needs.frontend)
    if release is not None and mode.first_release and release.release < mode.first_release:
        refusals.append(f"tritonops_frontend {mode.name} runs {mode.runs}, which NGC tritonserver images ship from "
                        f"{mode.first_release} on (Triton {mode.first_triton}); {release.release} has none: pick a "
                        f"base of {mode.first_release} or later")
    if release is None:
        notes.append("unknown Triton release: driver floor not checked")
    if needs.size_bytes is not None and engine.answering:
        if engine.data_root_free_bytes is None:
            notes.append("free disk under Docker's data root unknown")
        elif engine.data_root_free_bytes < DISK_FACTOR * needs.size_bytes:
            refusals.append(
                f"{gib(engine.data_root_free_bytes, 1)} free under Docker's data root {engine.data_root}; "
                f"needs {gib(DISK_FACTOR * needs.size_bytes, 1)} ({DISK_FACTOR}x the image's "
                f"{gib(needs.size_bytes, 1)})")
    return Preflight(tuple(refusals), tuple(notes))
