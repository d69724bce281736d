"""import-linter run as CI runs it, on this checkout or on a copy of the package with one import added."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

# Checks that the package analysed is the one under the folder, then lints with its pyproject.toml.
LINT = """
import importlib.util, sys
print("@@ analysed", importlib.util.find_spec("tritonops").origin)
from importlinter.cli import lint_imports
sys.exit(lint_imports("pyproject.toml", no_cache=True, no_logo=True))
"""


def lint(folder: Path) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", LINT], cwd=folder, env={**os.environ, "PYTHONPATH": str(folder)},
                          capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    analysed = output.split("@@ analysed ", 1)[1].split("\n", 1)[0]
    assert Path(analysed).is_relative_to(folder / "tritonops"), analysed
    return done.returncode, output


def copy_with(tmp_path: Path, module: str, added: str) -> Path:
    """A copy of the package and its pyproject.toml with `added` appended to `module` (a path)."""
    shutil.copytree(REPO / "tritonops", tmp_path / "tritonops", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / module, "a") as handle:
        handle.write(added)
    return tmp_path
