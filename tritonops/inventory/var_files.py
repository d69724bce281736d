"""group_vars/ and host_vars/: NAME.yml, NAME.yaml, NAME.json, NAME, or a folder NAME/ of such files."""

from __future__ import annotations

import os

from tritonops.errors import InputError
from tritonops.inventory.draft import check_var_name
from tritonops.inventory.model import Setting
from tritonops.inventory.paths import display_path
from tritonops.inventory.yaml_lines import LinedMap, load_yaml_file, plain
from tritonops.values.files import FileReads

_EXTENSIONS = (".yml", ".yaml", ".json")


def read_var_folder(inventory_dir: str, folder: str, names: list[str], reads: FileReads | None = None
                    ) -> tuple[dict[str, list[dict[str, Setting]]], list[str]]:
    """Variables per group (folder='group_vars') or host (folder='host_vars') found next to an
    inventory, for the given names: one mapping per file, in name order (a later file wins).
    Also returns the entries that match no name (a typo, or a group that no longer exists)."""
    root = os.path.join(inventory_dir, folder)
    if not os.path.isdir(root):
        return {}, []
    entries = [entry for entry in sorted(os.listdir(root)) if not entry.startswith(".") and not entry.endswith("~")]
    found: dict[str, list[dict[str, Setting]]] = {}
    matched: set[str] = set()
    for name in names:
        scope = f"group {name}" if folder == "group_vars" else "host"
        for entry in entries:
            if entry != name and not (entry.startswith(name) and entry[len(name):].lower() in _EXTENSIONS):
                continue
            path = os.path.join(root, entry)
            files = _files_below(path) if os.path.isdir(path) else [path]
            matched.add(entry)
            for file in files:
                found.setdefault(name, []).append(_read_var_file(file, scope, inventory_dir, reads))
    return found, [os.path.join(root, entry) for entry in entries if entry not in matched]


def _read_var_file(path: str, scope: str, inventory_dir: str, reads: FileReads | None) -> dict[str, Setting]:
    shown = display_path(path)
    data = load_yaml_file(path, shown, reads)
    if data is None:
        return {}
    if not isinstance(data, LinedMap):
        raise InputError("a variables file must be a mapping of name: value", f"{shown}:1")
    settings = {}
    for name, value in data.items():
        where = f"{shown}:{data.line_of(name)}"
        check_var_name(name, where)
        settings[name] = Setting(plain(value), f"{where} ({scope})", where, inventory_dir)
    return settings


def _files_below(folder: str) -> list[str]:
    files = []
    for current, dirs, names in os.walk(folder):
        dirs[:] = sorted(name for name in dirs if not name.startswith("."))
        files.extend(os.path.join(current, name) for name in sorted(names) if _is_var_file(name))
    return files


def _is_var_file(name: str) -> bool:
    if name.startswith(".") or name.endswith("~"):
        return False
    return os.path.splitext(name)[1].lower() in _EXTENSIONS + ("",)
