"""The small models `tritonops lab up` writes onto the controller, under <state dir>/models/<name>/,
for the lab's inventory to name (tritonops_model): `tritonops deploy -i inventory/lab.yml` then needs
no --model, and the deploy pushes the folder to each host over SFTP.

Made from code (`tritonops.lab.hub.model.LAB_MODELS`), the same bytes every time: a file already
holding them is left alone (its mtime too), so a second `lab up` changes nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tritonops.lab.hub.model import LAB_MODELS, tiny_model

FULL_HOST_MODEL = "tiny-llama"  # the lab_full group's tritonops_model
SMALL_GPU_MODEL = "micro-llama"  # a host variable on hosts of these profiles
SMALL_GPU_PROFILES = ("2080ti",)


def models_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "models"


def model_path(state_dir: Path, name: str) -> Path:
    return models_dir(state_dir) / name


def host_model(profile: str) -> str | None:
    """The model a host of this profile names as a host variable (None: its group's)."""
    return SMALL_GPU_MODEL if profile in SMALL_GPU_PROFILES else None


def _write_bytes_if_changed(path: Path, data: bytes) -> bool:
    try:
        if path.is_file() and not path.is_symlink() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def write_models(state_dir: Path) -> list[Path]:
    """Write every lab model under models_dir(state_dir); anything else there is removed (a stray
    file would become part of the weights). Returns the paths written or removed (empty: no change)."""
    root = models_dir(state_dir)
    root.mkdir(parents=True, exist_ok=True)
    touched: list[Path] = []
    for entry in sorted(root.iterdir()):
        if entry.name not in LAB_MODELS:
            _remove(entry)
            touched.append(entry)
    for name, args in LAB_MODELS.items():
        folder = root / name
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            _remove(folder)
        folder.mkdir(exist_ok=True)
        files = tiny_model(**args)
        for entry in sorted(folder.iterdir()):
            if entry.name not in files:
                _remove(entry)
                touched.append(entry)
        for file_name, data in files.items():
            if _write_bytes_if_changed(folder / file_name, data):
                touched.append(folder / file_name)
    return touched


def remove_models(state_dir: Path) -> bool:
    root = models_dir(state_dir)
    if not root.exists():
        return False
    shutil.rmtree(root)
    return True
