"""Which -i sources the built-in reader leaves to `ansible-inventory`, and why.

The built-in reader (YAML, INI, group_vars/, host_vars/) is the default and the fast path. A source it
does not read goes to `ansible-inventory -i SRC --list` (ansible_run.py):
- an executable script (a regular file, executable, starting with `#!`): Ansible's script plugin;
- a YAML file naming a `plugin:` (aws_ec2, constructed, ...): an inventory plugin's configuration;
- Ansible Vault data in the source or in the group_vars/ and host_vars/ beside it (a file encrypted
  whole, or `!vault` values): only Ansible can decrypt it.
A file that is merely executable (copied from a mounted disk) without `#!` stays the built-in reader's.
"""

from __future__ import annotations

import os
import re

from tritonops.errors import InputError
from tritonops.inventory.paths import inventory_files_in
from tritonops.values.files import FileReads

VAULT_MARK = b"$ANSIBLE_VAULT"
_PLUGIN_LINE = re.compile(rb"^plugin\s*:", re.MULTILINE)
_VAR_FOLDERS = ("group_vars", "host_vars")
_MAX_VAR_FILES = 10_000  # a var folder walk is bounded: a mistaken -i pointing at a huge tree stays quick


def ansible_reason(given: str, reads: FileReads | None = None) -> str | None:
    """Why `given` (an -i file or folder) must be read by ansible-inventory; None: the built-in reader reads it.
    A path that does not exist is the built-in reader's to refuse (with its own message). With `reads`, what
    this looked at is kept for the built-in reader (each file opened once)."""
    reads = reads or FileReads()
    if os.path.isdir(given):
        files, folder = inventory_files_in(given) + _scripts_in(given), given
    elif os.path.isfile(given):
        files, folder = [given], os.path.dirname(given) or "."
    else:
        return None
    for path in files:
        reason = _file_reason(path, reads)
        if reason:
            return reason if path == given else f"{os.path.basename(path)} {reason}"
    for path in _var_files(folder):
        if VAULT_MARK in _head(path, reads):
            return f"{os.path.relpath(path, folder)} holds Ansible Vault data"
    return None


def _scripts_in(folder: str) -> list[str]:
    """Executable files of a folder that inventory_files_in leaves out (cmdb.py): Ansible runs them."""
    listed = set(inventory_files_in(folder))
    return [path for path in (os.path.join(folder, name) for name in sorted(os.listdir(folder))
                              if not name.startswith(".") and not name.endswith("~"))
            if path not in listed and os.path.isfile(path) and os.access(path, os.X_OK)]


def _file_reason(path: str, reads: FileReads) -> str | None:
    head = _head(path, reads)
    if head.startswith(b"#!") and os.access(path, os.X_OK):
        return "is an executable inventory script"
    if VAULT_MARK in head:
        return "holds Ansible Vault data"
    if path.lower().endswith((".yml", ".yaml")) and _PLUGIN_LINE.search(head):
        return "names an inventory plugin"
    return None


def encrypted_var_files(source: str) -> list[tuple[str, str, str]]:
    """(scope 'group'|'host', its name, path) of each group_vars/host_vars file beside `source` that is
    encrypted whole: Ansible lists its values decrypted, the caller marks them secret."""
    folder = source if os.path.isdir(source) else os.path.dirname(source) or "."
    found = []
    for path in _var_files(folder):
        if _head(path, FileReads()).lstrip().startswith(VAULT_MARK):
            kind, first = os.path.relpath(path, folder).split(os.sep)[:2]
            name = first if first != os.path.basename(path) else re.sub(r"\.(ya?ml|json)$", "", first, flags=re.I)
            found.append(("group" if kind == "group_vars" else "host", name, path))
    return found


def _var_files(folder: str) -> list[str]:
    found: list[str] = []
    for name in _VAR_FOLDERS:
        for current, dirs, files in os.walk(os.path.join(folder, name)):
            dirs[:] = sorted(entry for entry in dirs if not entry.startswith("."))
            found += [os.path.join(current, entry) for entry in sorted(files) if not entry.startswith(".")]
            if len(found) > _MAX_VAR_FILES:
                return found[:_MAX_VAR_FILES]
    return found


def _head(path: str, reads: FileReads) -> bytes:
    """The file's bytes (bounded); b"" for what cannot be read here: the reader that takes it says why."""
    try:
        return reads.file(path)
    except InputError:  # a FIFO, a device or a too-large file: not ours to judge here
        return b""
