"""Which OpenSSH client config applies, and what it says about one address.

paramiko reads the file through `safe_ssh_config.SafeSshConfig` (Match exec without a shell,
ProxyCommand left as written; see that module). paramiko is imported only when there is a file.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any

from tritonops.errors import InputError

if TYPE_CHECKING:
    import paramiko

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
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise InputError("SSH config file not found (given explicitly or by $TRITONOPS_SSH_CONFIG)", path) from None
    if not stat.S_ISREG(mode):
        raise InputError("SSH config is not a regular file", path)
    from tritonops.inventory.safe_ssh_config import SafeSshConfig

    try:
        with open(path, encoding="utf-8") as handle:
            config = SafeSshConfig(path)
            config.parse(handle)
        return config, path
    except Exception as err:  # paramiko raises a variety of types for a bad file
        raise InputError(f"cannot read SSH config: {err}", path) from None


def lookup(config: paramiko.SSHConfig | None, address: str, path: str | None) -> dict[str, Any]:
    if config is None:
        return {}
    try:
        return dict(config.lookup(address))
    except InputError:
        raise
    except Exception as err:
        raise InputError(f"SSH config lookup for {address!r} failed: {err}", path) from None
