"""How inventory paths are shown to people and which files in a folder are inventories."""

from __future__ import annotations

import os
import re

from tritonops.values.files import read_regular_text

YAML_EXTENSIONS = (".yml", ".yaml")
INI_EXTENSIONS = (".ini", ".cfg")
_VAR_FOLDERS = ("group_vars", "host_vars")
_YAML_START = re.compile(r"^(---|[\w.-]+:\s*(#.*)?$)")


def display_path(path: str) -> str:
    """Relative to the working directory when inside it (short, clickable), else absolute."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith("..") else relative


def inventory_format(path: str) -> str:
    """'yaml' or 'ini': by extension, else by the first meaningful line (like Ansible's plugins)."""
    lower = path.lower()
    if lower.endswith(YAML_EXTENSIONS):
        return "yaml"
    if lower.endswith(INI_EXTENSIONS):
        return "ini"
    for line in read_regular_text(path, display_path(path), what="inventory file").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";")):
            continue
        return "yaml" if _YAML_START.match(stripped) else "ini"
    return "yaml"


def inventory_files_in(folder: str) -> list[str]:
    """The inventory files of a folder given to -i, sorted by name: YAML, INI and files with
    no extension; hidden files, backups and the group_vars/host_vars folders are skipped."""
    found = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if name.startswith(".") or name.endswith("~") or name in _VAR_FOLDERS or not os.path.isfile(path):
            continue
        extension = os.path.splitext(name)[1].lower()
        if extension in YAML_EXTENSIONS + INI_EXTENSIONS or extension == "":
            found.append(path)
    return found
