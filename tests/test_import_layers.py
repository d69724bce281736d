"""The layers, enforced: the import-linter contracts in pyproject.toml (`[tool.importlinter]`: the layer
order, no cycles inside a package, a pure core that talks to no host) hold for the package, and they
do fail when an import runs the wrong way, also from inside a function.

import-linter runs in a fresh interpreter, from the folder holding the package it checks (this checkout's,
or a copy with one bad import added), the way `lint-imports` runs in CI.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = "tritonops' layers: imports point downward only"
ACYCLIC = "no import cycles between the modules of one package"

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
    shutil.copytree(ROOT / "tritonops", tmp_path / "tritonops", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / module, "a") as handle:
        handle.write(added)
    return tmp_path


def test_the_package_keeps_its_import_contracts():
    code, output = lint(ROOT)
    assert code == 0, output
    assert f"{LAYERS} KEPT" in output and f"{ACYCLIC} KEPT" in output and ", 0 broken." in output


def test_an_import_up_the_layers_inside_a_function_breaks_the_layers_contract(tmp_path):
    folder = copy_with(tmp_path, "tritonops/units.py",
                       "\n\ndef _upward():\n    from tritonops.cli import main  # noqa: F401\n")
    lines = (folder / "tritonops/units.py").read_text().splitlines()
    line = lines.index("    from tritonops.cli import main  # noqa: F401") + 1
    code, output = lint(folder)
    assert code == 1, output
    assert f"{LAYERS} BROKEN" in output
    assert "tritonops.units is not allowed to import tritonops.cli" in output
    assert f"tritonops.units -> tritonops.cli.main (l.{line})" in output  # the import inside the function


def test_a_cycle_inside_a_package_breaks_the_acyclic_contract(tmp_path):
    """The lab's API and its Prometheus helper once imported each other: one layer, so only the acyclic
    contract sees it."""
    folder = copy_with(tmp_path, "tritonops/lab/defaults.py",
                       "\n\ndef _cycle():\n    from tritonops.lab import api  # noqa: F401\n")
    code, output = lint(folder)
    assert code == 1, output
    assert f"{LAYERS} KEPT" in output and f"{ACYCLIC} BROKEN" in output
    assert ".defaults -> .api" in output or ".api -> .defaults" in output
