"""Which OpenSSH client config applies, and what it says about one address."""

from __future__ import annotations

import os
from typing import Any

import paramiko

from tritonops.errors import InputError

ENV_VAR = "TRITONOPS_SSH_CONFIG"


def ssh_config_path(explicit: str | None) -> str | None:
    """The explicit file, else $TRITONOPS_SSH_CONFIG, else ~/.ssh/config if it exists, else none."""
    if explicit is not None:
        return explicit
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return from_env
    default = os.path.expanduser("~/.ssh/config")
    return default if os.path.isfile(default) else None


def load_ssh_config(explicit: str | None) -> tuple[paramiko.SSHConfig | None, str | None]:
    """The parsed config and its path (None, None when there is none to read)."""
    path = ssh_config_path(explicit)
    if path is None or path == os.devnull:
        return None, path
    if not os.path.isfile(path):
        raise InputError("SSH config file not found (given explicitly or by $TRITONOPS_SSH_CONFIG)", path)
    try:
        return paramiko.SSHConfig.from_path(path), path
    except Exception as err:  # paramiko raises a variety of types for a bad file
        raise InputError(f"cannot read SSH config: {err}", path) from None


def lookup(config: paramiko.SSHConfig | None, address: str, path: str | None) -> dict[str, Any]:
    if config is None:
        return {}
    try:
        return dict(config.lookup(address))
    except Exception as err:
        raise InputError(f"SSH config lookup for {address!r} failed: {err}", path) from None
