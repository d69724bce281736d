"""The Ray token of each pipeline (issue #28): one per deployment and cluster, made on the controller the first
time (random, 256 bits) and kept there (0600, in tritonops' state folder), so every member of the cluster gets the
same one and a later run finds it. It reaches each member over SSH only, as a 0600 file under
<root>/<deployment>/ray/ that the member's Ray node reads; no output shows it (its name says it is a secret).
Delete the file to rotate the token: the next deploy restarts every member's node with the new one.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from tritonops.values.names import safe_name
from tritonops.values.user_dirs import user_path


def tokens_dir() -> Path:
    return user_path("state", "ray", override="TRITONOPS_RAY_TOKENS")


def cluster_token(deployment: str, cluster: str, folder: Path | None = None) -> str:
    """The cluster's token, made and kept on the first call."""
    folder = folder or tokens_dir()
    name = f"{safe_name(deployment, 'deployment')}--{safe_name(cluster, 'tritonops_cluster')}.token"
    path = folder / name
    try:
        token = path.read_text().strip()
        if len(token) >= 32:
            return token
    except FileNotFoundError:
        pass
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_hex(32)
    tmp = folder / f".{name}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    try:
        os.link(tmp, path)  # the first run to make one wins; another finds it
    except FileExistsError:
        token = path.read_text().strip()
    finally:
        tmp.unlink()
    return token
