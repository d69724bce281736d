"""paramiko, loaded without invoke: `from tritonops.transport.paramiko_lib import paramiko`.

paramiko.config imports invoke when it is installed (paramiko lists it as a dependency), only to run
`Match exec` lines of an SSH config itself. That import costs 0.1-0.2 s of every command that uses
SSH (invoke brings unittest.mock and its own copy of YAML). tritonops never lets paramiko run those
lines: inventory/safe_ssh_config runs them itself, without a shell. So while paramiko loads, invoke is
hidden (a None entry in sys.modules makes `import invoke` raise ImportError, the case paramiko
handles as "not installed"); the entry is removed at once, and anything importing invoke later gets
it as usual. If paramiko or invoke is already loaded, nothing is hidden.
tests/test_startup_imports.py checks both: invoke stays out, and Match exec still works.
"""

import sys

if "paramiko" not in sys.modules and "invoke" not in sys.modules:
    sys.modules["invoke"] = None  # type: ignore[assignment]
    try:
        import paramiko
    finally:
        if sys.modules.get("invoke", 0) is None:
            del sys.modules["invoke"]

import paramiko  # noqa: E402,F811  (the loaded module, either way)

__all__ = ["paramiko"]
