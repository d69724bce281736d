"""huggingface_hub for lab hosts: its wheels downloaded once on the controller with pip (cached in
the lab cache), unpacked into a lab host's python3 site folder, as an operator would
`pip install huggingface_hub` on a GPU host. The weights tests run the hub library there
(`runner: host`); the vllm_env image path (`runner: image`) is the same program in a container.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from tritonops.lab.cache import filling
from tritonops.tarball import tar_bytes
from pathlib import Path

HOST_PYTHON = "3.11"  # Debian bookworm's python3 on lab hosts
STAGE = "/tmp/tritonops-lab-hub-wheels"


def hub_wheels(cache_dir: Path, requirement: str = "huggingface_hub") -> list[Path]:
    """The wheels of `requirement` and its dependencies for the lab hosts' python3 (cached)."""
    folder = cache_dir / "hub-wheels"
    with filling(cache_dir, "hub-wheels"):
        found = sorted(folder.glob("*.whl"))
        if any(p.name.startswith("huggingface_hub-") for p in found):
            return found
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--python-version",
                        HOST_PYTHON, "--platform", "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64",
                        "-d", str(folder), requirement], check=True, timeout=300, capture_output=True)
        return sorted(folder.glob("*.whl"))


def install_on_host(transport, wheels: list[Path]) -> bool:
    """Unpack the wheels into the host python3's site folder; False when it already imports huggingface_hub."""
    if transport.run("python3 -c 'import huggingface_hub'", timeout=60).ok:
        return False
    stage = shlex.quote(STAGE)
    script = (f"rm -rf {stage} && mkdir -p {stage} && tar -xf - -C {stage} && "
              "site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])') && "
              f"mkdir -p \"$site\" && for w in {stage}/*.whl; do python3 -m zipfile -e \"$w\" \"$site\"; done && "
              f"rm -rf {stage} && python3 -c 'import huggingface_hub'")
    result = transport.run(script, stdin=tar_bytes({wheel.name: wheel.read_bytes() for wheel in wheels}), timeout=300)
    if not result.ok:
        raise RuntimeError(f"installing huggingface_hub on {transport.name} failed: {result.tail()}")
    return True
