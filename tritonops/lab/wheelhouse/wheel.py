"""Build the stand-in `vllm` wheel from the sources in vllm_src/ (pure but for the optional write).

A wheel is a zip with a dist-info; writing it directly keeps the lab offline and the bytes
reproducible (fixed timestamps, sorted entries): same version -> same sha256.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from importlib import resources
from pathlib import Path


ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _sources() -> dict[str, str]:
    """Package path ('vllm/engine/arg_utils.py') -> template text."""
    root = resources.files("tritonops.lab.wheelhouse").joinpath("vllm_src")
    found: dict[str, str] = {}

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".py.txt"):
                found[f"{prefix}{child.name[:-4]}"] = child.read_text()

    walk(root, "")
    return dict(sorted(found.items()))


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_name(version: str) -> str:
    return f"vllm-{version}-py3-none-any.whl"


def wheel_bytes(version: str) -> bytes:
    files = {path: text.replace("{version}", version).encode() for path, text in _sources().items()}
    dist = f"vllm-{version}.dist-info"
    files[f"{dist}/METADATA"] = (
        "Metadata-Version: 2.1\nName: vllm\n"
        f"Version: {version}\n"
        "Summary: tritonops lab stand-in for vLLM (a test fixture, not vLLM)\n"
        "Requires-Python: >=3.8\n").encode()   # like vLLM 0.25: no Ray (a cluster member's image adds it)
    files[f"{dist}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: tritonops-lab\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{dist}/top_level.txt"] = b"vllm\n"
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist}/RECORD"] = (record + f"{dist}/RECORD,,\n").encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()


def build_wheel(version: str, out_dir: Path | str) -> Path:
    out = Path(out_dir) / wheel_name(version)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(wheel_bytes(version))
    return out
