"""The manifest: the files of a model folder with their sizes and SHA-256 (pure).

Kept inside the folder as `.tritonops-manifest.json`, written last, so it moves with the folder.
`stamps` (size and mtime in ns when verified) let a later fact skip re-hashing files nobody touched;
a file whose stamp changed is hashed again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from tritonops.errors import TritonopsError

MANIFEST_NAME = ".tritonops-manifest.json"
FORMAT = 1


@dataclass(frozen=True)
class FileEntry:
    path: str  # relative, '/'-separated
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    files: tuple[FileEntry, ...]
    source: dict = field(default_factory=dict)  # Source.identity(), plus the resolved commit for hubs

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    def by_path(self) -> dict[str, FileEntry]:
        return {f.path: f for f in self.files}

    def content_sha256(self) -> str:
        """A digest of the file list (path, size, sha256): the same files, the same digest."""
        h = hashlib.sha256()
        for f in sorted(self.files, key=lambda e: e.path):
            h.update(f"{f.path}\0{f.size}\0{f.sha256}\n".encode())
        return h.hexdigest()

    def to_json(self) -> dict:
        return {"format": FORMAT, "source": self.source,
                "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in self.files]}


def manifest_from_json(data: object) -> Manifest:
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), list):
        raise TritonopsError("not a tritonops weights manifest (format 1)")
    files = []
    for entry in data["files"]:
        try:
            path, size, sha = entry["path"], entry["size"], entry["sha256"]
        except (TypeError, KeyError):
            raise TritonopsError("a manifest entry lacks path, size or sha256") from None
        if not isinstance(path, str) or not isinstance(size, int) or size < 0 or not isinstance(sha, str):
            raise TritonopsError(f"manifest entry {entry!r:.80} is malformed")
        files.append(FileEntry(path, size, sha))
    source = data.get("source") if isinstance(data.get("source"), dict) else {}
    return Manifest(tuple(files), source)


def manifest_text(manifest: Manifest) -> str:
    return json.dumps(manifest.to_json(), indent=1, sort_keys=True) + "\n"
