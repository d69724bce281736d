"""The shell script that runs inside the build container (pure: text in, text out).

It installs the pinned vLLM through the user's pip settings, checks what got installed, and
puts the Triton vLLM backend code under /opt/tritonserver/backends/vllm. Every user value is
shell-quoted; file contents travel base64-encoded, so no value can end a heredoc or a quote.
The script deletes itself and its temporary files: nothing of it (index URLs may carry
credentials) stays in the committed image.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shlex
from importlib import resources

from tritonops.image.spec import PipOptions

SCRIPT_PATH = "/tmp/tritonops-vllm-env-build.sh"
CONSTRAINTS_PATH = "/tmp/tritonops-constraints.txt"
BACKEND_DIR = "/opt/tritonserver/backends/vllm"
MARKER = "tritonops-build:"  # prefix of the script's own progress lines in the container log

# Exit codes the script uses for problems of the base image (pip's own failures exit 1).
EXIT_NO_PYTHON = 90
EXIT_NO_PIP = 91
EXIT_WRONG_VERSION = 92


def backend_code() -> bytes:
    """The Triton vLLM backend `model.py` tritonops installs (ours: GitHub is not reachable
    from every fleet, and its code must match the vLLM API of the pin)."""
    return resources.files("tritonops.image").joinpath("assets", "vllm_backend_model.py.txt").read_bytes()


def backend_code_sha() -> str:
    return hashlib.sha256(backend_code()).hexdigest()


def pip_install_args(pip: PipOptions, vllm_version: str, constraints_path: str = CONSTRAINTS_PATH,
                     requirements: tuple[str, ...] = ()) -> list[str]:
    """`pip install` arguments after `python3 -m pip` (an argument list: quote when rendering)."""
    args = ["install", "--no-cache-dir", "--disable-pip-version-check", "--no-input", "--progress-bar", "off"]
    if pip.index_url:
        args += ["--index-url", pip.index_url]
    for url in pip.extra_index_urls:
        args += ["--extra-index-url", url]
    for host in pip.trusted_hosts:
        args += ["--trusted-host", host]
    if pip.constraints is not None:
        args += ["--constraint", constraints_path]
    args += list(pip.extra_args)
    args.append(f"vllm=={vllm_version}")
    return args + list(requirements)   # in the same resolve as vLLM: one consistent set


def render(pip: PipOptions, vllm_version: str, code: bytes | None = None, requirements: tuple[str, ...] = ()) -> str:
    code = backend_code() if code is None else code
    q = shlex.quote
    args = pip_install_args(pip, vllm_version, requirements=requirements)
    pip_cmd = " ".join(q(a) for a in args)
    shown = " ".join(q(redact(a)) for a in args)
    lines = [
        "#!/bin/sh",
        "set -eu",
        # The image is a dedicated environment: a system-wide install is the point (PEP 668).
        "export PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore",
        'PY=$(command -v python3 || command -v python || true)',
        f'[ -n "$PY" ] || {{ echo "{MARKER} the base image has no python3" >&2; exit {EXIT_NO_PYTHON}; }}',
        f'"$PY" -m pip --version >/dev/null 2>&1 || {{ echo "{MARKER} the base image has no pip '
        f'(python3 -m pip failed): use a base image with pip" >&2; exit {EXIT_NO_PIP}; }}',
    ]
    if pip.constraints is not None:
        lines.append(_write_file(CONSTRAINTS_PATH, pip.constraints.encode()))
    lines += [
        f"echo {q(MARKER)} pip {shown}",
        f'"$PY" -m pip {pip_cmd}',
        'GOT=$("$PY" -c \'import importlib.metadata as m; print(m.version("vllm"))\')',
        f'[ "$GOT" = {q(vllm_version)} ] || {{ echo "{MARKER} pip installed vllm $GOT, not "{q(vllm_version)} >&2; '
        f'exit {EXIT_WRONG_VERSION}; }}',
        f"mkdir -p {q(BACKEND_DIR)}",
        _write_file(f"{BACKEND_DIR}/model.py", code),
        f'echo "{MARKER} vllm $GOT installed, backend code in {BACKEND_DIR}"',
        f'rm -f {q(CONSTRAINTS_PATH)} "$0"',
        "rm -rf /root/.cache/pip",
    ]
    return "\n".join(lines) + "\n"


def redact(arg: str) -> str:
    """An URL's password is not for logs: 'http://u:secret@h/' -> 'http://u:****@h/'."""
    return re.sub(r"(://[^/:@\s]+:)[^/@\s]+@", r"\1****@", arg)


def _write_file(path: str, data: bytes) -> str:
    encoded = base64.b64encode(data).decode()
    return (f'"$PY" -c \'import base64,sys; open(sys.argv[1],"wb").write(base64.b64decode(sys.argv[2]))\' '
            f"{shlex.quote(path)} {encoded}")
