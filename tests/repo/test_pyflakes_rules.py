"""Pyflakes' rules (ruff's F) over the package, the benches and the tests: a name used but never defined, an
import or variable left unused, an f-string with nothing to format. An undefined name in a rarely taken branch
passed every unit test once and failed `status` on every lab host (fcdba77): this finds it before a lab does.
The tests' fixtures are imported into the modules that use them by name (pytest's way), so F811 is left out there."""

import subprocess
import sys

from tests.support.paths import REPO



def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           "--select", "F", *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_the_package_and_the_benches_pass_pyflakes_rules():
    found = ruff("tritonops", "bench")
    assert found.returncode == 0, found.stdout + found.stderr


def test_the_tests_pass_pyflakes_rules_but_fixture_redefinitions():
    found = ruff("--ignore", "F811", "tests")
    assert found.returncode == 0, found.stdout + found.stderr


def test_the_check_finds_an_undefined_name(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def status():\n    return host_status(deployed)\n")
    found = ruff(str(bad))
    assert found.returncode == 1 and "F821" in found.stdout and "deployed" in found.stdout
