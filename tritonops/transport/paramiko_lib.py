"""paramiko, loaded without what it imports for nothing: `from tritonops.transport.paramiko_lib import paramiko`.

Two of paramiko's imports cost every SSH command time and are never used by tritonops:

- invoke. paramiko.config imports it when it is installed (paramiko lists it as a dependency), only to
  run `Match exec` lines of an SSH config itself: 0.1-0.2 s (invoke brings unittest.mock and its own
  copy of YAML). tritonops never lets paramiko run those lines: inventory/safe_ssh_config runs them
  itself, without a shell. While paramiko loads, invoke is hidden (a None entry in sys.modules makes
  `import invoke` raise ImportError, the case paramiko handles as "not installed").
- importlib.metadata. paramiko's `__init__` imports it to read its own version (its SSH banner says
  `paramiko_<version>`): ~30 ms of imports (email, zipfile, csv) and a scan of sys.path, a twentieth of
  a one-host probe. While paramiko loads, `_OwnVersion` stands in for it: it reads the version from the
  `paramiko-<version>.dist-info` folder beside the package (the name pip gives it), and hands any other
  question, or a package it cannot place, to the real importlib.metadata.

Both entries are removed at once after paramiko has loaded; anything importing invoke or
importlib.metadata later gets the real module. If paramiko is already loaded, nothing is hidden.
tests/unit/cli/test_startup_imports.py checks it: neither is loaded, `paramiko.__version__` is the installed
version, and Match exec still works.
"""

import os
import sys
import types


def _dist_info_version(package: str) -> str | None:
    """The version in the one `<package>-<version>.dist-info` folder beside the package, else None."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.origin:
        return None
    folder = os.path.dirname(os.path.dirname(spec.origin))
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    found = [name[len(package) + 1:-len(".dist-info")] for name in names
             if name.startswith(package + "-") and name.endswith(".dist-info")]
    return found[0] if len(found) == 1 and found[0] else None


def _real_metadata() -> types.ModuleType:
    saved = sys.modules.pop("importlib.metadata", None)
    try:
        import importlib.metadata as real
    except BaseException:
        if saved is not None:
            sys.modules["importlib.metadata"] = saved
        raise
    return real


def _own_version_module() -> types.ModuleType:
    module = types.ModuleType("importlib.metadata", "Stands in for importlib.metadata while paramiko loads.")

    def version(name: str) -> str:
        return _dist_info_version(name) or _real_metadata().version(name)

    def __getattr__(attribute: str):  # PEP 562: anything else from the real module
        return getattr(_real_metadata(), attribute)

    module.version = version  # type: ignore[attr-defined]
    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    return module


if "paramiko" not in sys.modules:
    hidden = {}
    if "invoke" not in sys.modules:
        hidden["invoke"] = sys.modules["invoke"] = None  # type: ignore[assignment]
    if "importlib.metadata" not in sys.modules:
        hidden["importlib.metadata"] = sys.modules["importlib.metadata"] = _own_version_module()
    try:
        import paramiko
    finally:
        for name, stand_in in hidden.items():
            if sys.modules.get(name, 0) is stand_in:
                del sys.modules[name]
        import importlib

        if getattr(importlib, "metadata", None) is hidden.get("importlib.metadata", 0):
            del importlib.metadata

import paramiko  # noqa: E402,F811  (the loaded module, either way)

__all__ = ["paramiko"]
