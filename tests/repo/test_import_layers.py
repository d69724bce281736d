"""The layers, enforced: the import-linter contracts in pyproject.toml (`[tool.importlinter]`: the layer
order, no cycles inside a package, a pure core that talks to no host) hold for the package, and they
do fail when an import runs the wrong way, also from inside a function.

import-linter runs in a fresh interpreter, from the folder holding the package it checks (this checkout's,
or a copy with one bad import added), the way `lint-imports` runs in CI.
"""


from tests.support.import_lint import copy_with, lint
from tests.support.paths import REPO

LAYERS = "tritonops' layers: imports point downward only"
ACYCLIC = "no import cycles between the modules of one package"


def test_the_package_keeps_its_import_contracts():
    code, output = lint(REPO)
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
