"""NGC Triton releases: which vLLM, CUDA and driver each `<yy.mm>` image needs (pure data).

Source: ../shared/reference/triton-vllm.md §2.1 — NVIDIA's compatibility matrix
(`server:docs/introduction/compatibility.md`, "vllm-python-py3"), the vLLM pin in
`server:build.py` at the matching tag, and the CUDA minor-version compatibility rule
(CUDA 12.x runs on driver >= 525, CUDA 13.x needs >= 580). The plain `-py3` image of a release
ships the same CUDA as its `-vllm-python-py3` sibling [inference: same build, same base].
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OFFICIAL_REPOSITORY = "nvcr.io/nvidia/tritonserver"

# Floor per CUDA major version (NVIDIA's minor-version compatibility table).
CUDA_MAJOR_MIN_DRIVER = {12: (525, 0), 13: (580, 0)}


@dataclass(frozen=True)
class NgcRelease:
    release: str  # yy.mm
    vllm: str  # the pin in server:build.py (the compat matrix's NVIDIA build may differ)
    cuda: str
    matrix_driver: str  # "CUDA Driver version" column of the compat matrix: what NVIDIA tested with
    size_bytes: int  # the -vllm-python-py3 image, as the matrix states it
    min_compute_capability: tuple[int, int]

    @property
    def cuda_major(self) -> int:
        return int(self.cuda.split(".")[0])

    @property
    def min_driver(self) -> tuple[int, int]:
        """The oldest driver that runs this image's CUDA (major.minor of the driver version)."""
        return CUDA_MAJOR_MIN_DRIVER.get(self.cuda_major, _version_tuple(self.matrix_driver)[:2])

    @property
    def official_image(self) -> str:
        return f"{OFFICIAL_REPOSITORY}:{self.release}-vllm-python-py3"

    @property
    def base_image(self) -> str:
        return f"{OFFICIAL_REPOSITORY}:{self.release}-py3"


_G = 1 << 30
_CC_60, _CC_75 = (6, 0), (7, 5)

RELEASES: dict[str, NgcRelease] = {r.release: r for r in (
    NgcRelease("24.04", "0.4.0.post1", "12.4.1", "550.54.15", 17 * _G, _CC_60),
    NgcRelease("24.05", "0.4.0.post1", "12.4.1", "550.54.15", 18 * _G, _CC_60),
    NgcRelease("24.06", "0.4.3", "12.5.0.23", "555.42.02", 18 * _G, _CC_60),
    NgcRelease("24.07", "0.5.0.post1", "12.5.1", "555.42.06", 19 * _G, _CC_60),
    NgcRelease("24.08", "0.5.3.post1", "12.6.0.022", "560.35.03", 19 * _G, _CC_60),
    NgcRelease("24.09", "0.5.3.post1", "12.6.1.006", "560.35.03", 19 * _G, _CC_60),
    NgcRelease("24.10", "0.5.5", "12.6.2.004", "560.35.03", 21 * _G, _CC_60),
    NgcRelease("24.11", "0.5.5", "12.6.3.001", "560.35.05", int(22.1 * _G), _CC_60),
    NgcRelease("24.12", "0.5.5", "12.6.3.004", "560.35.05", 20 * _G, _CC_60),
    NgcRelease("25.01", "0.6.3.post1", "12.8.0.038", "570.86.10", 23 * _G, _CC_75),
    NgcRelease("25.02", "0.7.0", "12.8.0.038", "570.86.10", 22 * _G, _CC_75),
    NgcRelease("25.03", "0.7.3", "12.8.1.012", "570.124.06", 22 * _G, _CC_75),
    NgcRelease("25.04", "0.8.1", "12.9.0.036", "575.51.02", 10 * _G, _CC_75),
    NgcRelease("25.05", "0.8.4", "12.9.0.043", "575.51.03", 10 * _G, _CC_75),
    NgcRelease("25.06", "0.9.0.1", "12.9.0.043", "575.51.03", 10 * _G, _CC_75),
    NgcRelease("25.07", "0.9.0.1", "12.9.0.043", "575.51.03", 10 * _G, _CC_75),
    NgcRelease("25.08", "0.9.2", "13.0.1.012", "580.82.07", int(8.1 * _G), _CC_75),
    NgcRelease("25.09", "0.10.1.1", "13.0.1.012", "580.82.07", int(7.78 * _G), _CC_75),
    NgcRelease("25.10", "0.10.2", "13.0.2.006", "580.95.05", int(8.34 * _G), _CC_75),
    NgcRelease("25.11", "0.11.0", "13.0.2.006", "580.95.05", int(8.72 * _G), _CC_75),
    NgcRelease("25.12", "0.11.1", "13.1.0.036", "590.44.01", int(8.54 * _G), _CC_75),
    NgcRelease("26.01", "0.13.0", "13.1.1.006", "590.48.01", int(8.79 * _G), _CC_75),
    NgcRelease("26.02", "0.15.1", "13.1.1.006", "590.48.01", int(8.9 * _G), _CC_75),
    NgcRelease("26.03", "0.17.1", "13.2.0.046", "595.45.04", int(9.22 * _G), _CC_75),
    NgcRelease("26.04", "0.19.0", "13.2.1.009", "595.58.03", int(9.09 * _G), _CC_75),
    NgcRelease("26.05", "0.19.0", "13.2.1.009", "595.58.03", int(9.3 * _G), _CC_75),
    NgcRelease("26.06", "0.22.1", "13.3.0.035", "610.43.02", int(10.21 * 1e9), _CC_75),
    NgcRelease("26.07", "0.24.0", "13.3.0.035", "610.43.02", int(10.28 * 1e9), _CC_75),
)}

# The production base the default `vllm_env` is built on: `tritonserver:25.11-py3`, with the default vLLM
# (tritonops.sizing.default_version, 0.25.0) pip-installed into it. No `-vllm-python-py3` tag ships 0.25
# (26.07's ships 0.24.0), so the choice is the plain image whose CUDA is the one vLLM 0.25 is built for:
# vLLM's CUDA follows PyTorch's, its default wheel moved to CUDA 13.0 with torch 2.11 in 0.20.0 ("CUDA
# bumped to 13.0.2 to match PyTorch 2.11.0", vLLM v0.20.0 release notes), and 0.25.0 ran on the lent H200
# as torch 2.11.0+cu130. 25.10 and 25.11 are the NGC releases on CUDA 13.0.2.006; 25.11 is the newer
# Triton. Later releases move to CUDA 13.1-13.3, which NVIDIA tested on R590/R595/R610 drivers, while a
# 13.0 base keeps what NVIDIA tested (580.95.05) on the floor the preflight applies: CUDA 13.x, driver
# >= 580 (the lent H200's 580.159.04 passes).
DEFAULT_BASE_RELEASE = "25.11"

_TAG = re.compile(r":(\d\d\.\d\d)(-[\w.-]+)?$")


def release_of(image: str) -> str | None:
    """The `yy.mm` an NGC-style Triton tag names ('...:24.10-py3' -> '24.10'), else None."""
    match = _TAG.search(image.split("@", 1)[0])
    return match.group(1) if match else None


def lookup(release: str | None) -> NgcRelease | None:
    return RELEASES.get(release) if release else None


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text))


def driver_tuple(version: str) -> tuple[int, ...]:
    """'580.159.04' -> (580, 159, 4): driver versions compare numerically, part by part."""
    return _version_tuple(version)
