"""Running aiperf: where it is installed and one `aiperf profile` run, bounded in time. aiperf (about 1.2 GB with
its dependencies) lives in its own virtual environment, called as a command: its pins clash with ours (rich
~=14.1 against our rich 15; docs/bench.md)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tritonops.errors import TritonopsError
from tritonops.values.user_dirs import user_path

AIPERF_VAR = "TRITONOPS_AIPERF"          # the aiperf executable (default: on PATH, else the default venv)
VENV_VAR = "TRITONOPS_AIPERF_VENV"
API_KEY_VAR = "TRITONOPS_BENCH_API_KEY"  # the door's key reaches aiperf in its environment only
INSTALL = "scripts/install-aiperf.sh (or: python3 -m venv ~/.local/share/tritonops/aiperf && " \
          "~/.local/share/tritonops/aiperf/bin/pip install aiperf==0.13.0)"


class AiperfMissing(TritonopsError):
    pass


def default_venv() -> Path:
    return user_path("data", "aiperf", override=VENV_VAR)


def aiperf_command() -> list[str]:
    """How aiperf is started: its venv's interpreter running aiperf_launch.py (which adds the API key from
    the environment), read from the aiperf script's #! line."""
    script = find_aiperf()
    with open(script, "rb") as handle:
        first = handle.readline(4096).decode("utf-8", "replace").strip()
    python = first[2:].strip().split()[0] if first.startswith("#!") and len(first) > 2 else ""
    if not python or not os.path.isabs(python) or "python" not in os.path.basename(python):
        raise AiperfMissing(f"{script} is not aiperf's console script (its first line: {first[:80]!r}); "
                            f"install it in its own venv with {INSTALL}")
    return [python, str(Path(__file__).with_name("aiperf_launch.py"))]


def find_aiperf() -> str:
    """The aiperf executable: $TRITONOPS_AIPERF, else `aiperf` on PATH, else the default venv's."""
    given = os.environ.get(AIPERF_VAR)
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise AiperfMissing(f"{AIPERF_VAR}={given} is not an executable file")
        return os.path.abspath(given)
    found = shutil.which("aiperf")
    if found:
        return found
    venv = default_venv() / "bin" / "aiperf"
    if venv.is_file() and os.access(venv, os.X_OK):
        return str(venv)
    raise AiperfMissing(f"aiperf is not installed: install it in its own venv with {INSTALL}")


@dataclass(frozen=True)
class AiperfRun:
    exit_code: int
    timed_out: bool
    log: str           # the last lines aiperf wrote (stdout and stderr)


def run_aiperf(argv: list[str], cwd: Path, timeout_s: float, api_key: str | None = None) -> AiperfRun:
    """One `aiperf profile` run; its output goes to <cwd>/aiperf.log. Past `timeout_s` its whole process group
    is stopped (aiperf runs several processes)."""
    env = dict(os.environ)
    env.pop(API_KEY_VAR, None)
    if api_key:
        env[API_KEY_VAR] = api_key
    # The tokenizer is a local folder, so the hub is not asked; HF_HUB_OFFLINE=1 would break it: aiperf's dataset
    # manager then takes the folder for a hub name (HFValidationError, aiperf 0.13.0).
    log_path = cwd / "aiperf.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        timed_out = False
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop(process)
        except BaseException:
            _stop(process)
            raise
    tail = log_path.read_bytes()[-4000:].decode("utf-8", "replace")
    return AiperfRun(process.returncode, timed_out, tail)


def _stop(process: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGINT, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
