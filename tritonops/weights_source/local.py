"""A model folder on the controller: its files, sizes and SHA-256 (the manifest a push is checked against)."""

from __future__ import annotations

import hashlib
import os
import stat

from tritonops.errors import InputError
from tritonops.weights_source.manifest import FileEntry, Manifest

MAX_FILES = 100_000
SKIPPED = (".tritonops-manifest.json",)


def local_manifest(folder: str, where: str | None = None) -> tuple[Manifest, dict[str, str]]:
    """(manifest, rel path -> local path) of the regular files under `folder` (links followed only
    when they point at regular files; hidden '.cache' folders of hub downloads skipped)."""
    root = os.path.abspath(os.path.expanduser(folder))
    if not os.path.isdir(root):
        raise InputError(f"{folder} is not a folder on the controller", where)
    entries, paths = [], {}
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".cache")
        for name in sorted(files):
            full = os.path.join(current, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if rel in SKIPPED or name.endswith(".part"):
                continue
            try:
                info = os.stat(full)
            except OSError as err:
                raise InputError(f"cannot read {rel}: {err.strerror}", where or folder) from None
            if not stat.S_ISREG(info.st_mode):
                continue
            entries.append(FileEntry(rel, info.st_size, _sha256(full, info)))
            paths[rel] = full
            if len(entries) > MAX_FILES:
                raise InputError(f"more than {MAX_FILES} files under {folder}", where)
    if not entries:
        raise InputError(f"{folder} holds no files", where)
    return Manifest(tuple(entries)), paths


_HASHED: dict[str, tuple[int, int, str]] = {}  # path -> (size, mtime_ns, sha256): facts() and steps() hash once


def _sha256(path: str, info: os.stat_result) -> str:
    known = _HASHED.get(path)
    if known and known[:2] == (info.st_size, info.st_mtime_ns):
        return known[2]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    _HASHED[path] = (info.st_size, info.st_mtime_ns, h.hexdigest())
    return h.hexdigest()
