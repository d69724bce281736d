"""An in-memory tar archive from bytes: what the docker API's put_archive/build and `tar -x` on a host take."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterable, Mapping


def tar_bytes(files: Mapping[str, bytes] | Iterable[tuple[str, bytes, int]], *, mode: int = 0o644,
              mtime: int = 0) -> bytes:
    """`files`: path -> data (each with `mode`), or (path, data, mode) triples; leading '/' dropped."""
    entries = [(path, data, mode) for path, data in files.items()] if isinstance(files, Mapping) else list(files)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path, data, entry_mode in entries:
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), entry_mode, mtime
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
