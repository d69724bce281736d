"""The model's own tokenizer for aiperf, as an absolute local folder with tokenizer.json and
tokenizer_config.json (aiperf's `builtin` would download, and the hub is not reached at bench time): the
controller's copy of the model when the inventory names a local folder, else the files fetched once over SSH
from the weights folder the release names on a serving host, kept under the bench root."""

from __future__ import annotations

import hashlib
import os
import posixpath
import shlex
from pathlib import Path

from tritonops.errors import TritonopsError

NEEDED = ("tokenizer.json", "tokenizer_config.json")
OPTIONAL = ("special_tokens_map.json", "generation_config.json", "config.json")  # text files (read as such)
MAX_BYTES = 64 * 1024 * 1024


def has_tokenizer(folder: str | os.PathLike) -> bool:
    return all(os.path.isfile(os.path.join(folder, name)) for name in NEEDED)


def local_copy(model_ref: str) -> str | None:
    """The controller's copy of the model when `model_ref` is a local folder holding the tokenizer."""
    path = os.path.abspath(os.path.expanduser(model_ref))
    return path if os.path.isdir(path) and has_tokenizer(path) else None


def fetched_copy(root: Path, transport, host: str, weights_dir: str) -> str:
    """The tokenizer files of `weights_dir` on the host, fetched into <root>/tokenizers/<digest>/ unless they
    already are there."""
    if not posixpath.isabs(weights_dir):
        raise TritonopsError(f"{host}: the release's weights folder {weights_dir!r} is not an absolute path")
    digest = hashlib.sha256(f"{host}\0{weights_dir}".encode()).hexdigest()[:16]
    folder = root / "tokenizers" / digest
    if has_tokenizer(folder):
        return str(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name in NEEDED + OPTIONAL:
        path = posixpath.join(weights_dir, name)
        found = transport.run(shlex.join(("head", "-c", str(MAX_BYTES), path)), timeout=120)
        if not found.ok:
            if name in NEEDED:
                raise TritonopsError(f"{host}: {path} cannot be read: the model's tokenizer is needed to count "
                                     "tokens (give --tokenizer FOLDER)")
            continue
        partial = folder / f".{name}.tmp"
        partial.write_text(found.stdout, encoding="utf-8")
        os.replace(partial, folder / name)
    return str(folder)
