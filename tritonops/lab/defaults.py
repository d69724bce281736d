"""The lab's defaults, in one place: the names, ports and folders that the CLI shows in its help and
that the lab's API and helpers (`python -m tritonops.lab prometheus|collector ...`) start from.
Standard library only, so `tritonops --help` loads nothing else of the lab."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_PREFIX = "tritonops-lab"  # container, volume and network name prefix; the label value
PORT_BASE = 22200                 # first sshd port on 127.0.0.1
PROMETHEUS_PORT = 9090            # where the lab's Prometheus listens on 127.0.0.1
REPO_ROOT = Path(__file__).resolve().parents[2]


def default_state_dir() -> Path:
    return REPO_ROOT / ".lab" if (REPO_ROOT / "pyproject.toml").exists() else Path.cwd() / ".lab"


def default_cache_dir() -> Path:
    """Shared by every lab on this machine (images are content-tagged); $TRITONOPS_LAB_CACHE overrides.
    The account's home from passwd, not $HOME: tests point $HOME elsewhere."""
    if os.environ.get("TRITONOPS_LAB_CACHE"):
        return Path(os.environ["TRITONOPS_LAB_CACHE"])
    import pwd

    return Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "tritonops-lab"
