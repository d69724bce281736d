"""Real Ray for the lab's vllm_env image: the pinned Ray's wheels and its dependencies', downloaded once
on the controller with pip (cached in the lab cache) and served by the lab's package index beside the
stand-in vllm, which requires them (wheel.py). The image build's `pip install vllm` then installs real
Ray from PyPI's own wheels, as a real image carries it.

Without the `cgraph` extra in the lab: it adds cupy-cuda12x (CUDA libraries, over 100 MB) and numpy 2,
which would shadow the Debian numpy the lab's tritonserver Python backend runs with; compiled graphs
move tensors over NCCL between GPUs, which the lab has not. The pin itself is
tritonops.serving.ray_version's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tritonops.lab.cache import filling
from tritonops.serving.ray_version import RAY_VERSION

LAB_PYTHON = "3.11"  # Debian bookworm's python3 in the lab's vllm_env image
LAB_RAY_REQUIREMENT = f"ray=={RAY_VERSION}"
_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64")


def ray_wheels(cache_dir: Path) -> dict[str, bytes]:
    """Wheel file name -> bytes: Ray and its dependencies for the lab image's Python (downloaded once)."""
    folder = Path(cache_dir) / f"ray-wheels-{RAY_VERSION}"
    with filling(Path(cache_dir), "ray-wheels"):
        if not any(folder.glob(f"ray-{RAY_VERSION}-*.whl")):
            folder.mkdir(parents=True, exist_ok=True)
            platforms = [arg for p in _PLATFORMS for arg in ("--platform", p)]
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version",
                            LAB_PYTHON, *platforms, "-d", str(folder), LAB_RAY_REQUIREMENT],
                           check=True, timeout=600, capture_output=True)
    return {path.name: path.read_bytes() for path in sorted(folder.glob("*.whl"))}


def project_of(wheel_name: str) -> str:
    """A wheel's PEP 503 project name: 'PyYAML-6.0-cp311-...whl' -> 'pyyaml', 'rpds_py-...' -> 'rpds-py'."""
    return re.sub(r"[-_.]+", "-", wheel_name.split("-", 1)[0]).lower()
