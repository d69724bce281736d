"""SSH keys of the lab: the client key pair (kept) and one host key per container (made at create)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from tritonops.errors import TritonopsError


def _keygen(path: Path, comment: str) -> None:
    proc = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise TritonopsError(f"ssh-keygen failed: {proc.stderr.strip()}")


def ensure_client_key(key_file: Path) -> str:
    """The lab's client key pair; returns the public key line."""
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        _keygen(key_file, "tritonops-lab")
    return key_file.with_suffix(".pub").read_text().strip()


def new_host_key(host: str) -> tuple[bytes, str]:
    """A fresh ed25519 host key: (private key file bytes, public key line)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "key"
        _keygen(path, f"root@{host}")
        return path.read_bytes(), path.with_suffix(".pub").read_text().strip()
