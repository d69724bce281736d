"""`pip install tritonops` deploys: the wheel built from this tree, installed into a fresh virtual
environment outside the checkout and run from a folder outside it, deploys the test lab's full host
with the playbook and roles the wheel carries. Nothing is read from the checkout: a file the package
needs that the wheel leaves out fails here, as the repository-root playbooks/ and roles/ once did.

The new environment gets its dependencies from the environment running the tests (a .pth file naming
its site-packages), so nothing is downloaded but the build's own setuptools, the way pip builds any
source tree. A deployment of its own (`t-wheel`, release only: `tritonops_serve: false`), removed after.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from tritonops.lab.testing import FULL_2080TI

CHECKOUT = Path(__file__).resolve().parents[2]
DEPLOYMENT = "t-wheel"
ROOT = "/opt/tritonops"


def source_tree(into: Path) -> Path:
    """What a source distribution holds: the build's configuration, the readme it names, the package."""
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(CHECKOUT / name, into / name)
    # a copy, so that no build/ or *.egg-info left in the checkout by an earlier build adds files to the wheel
    shutil.copytree(CHECKOUT / "tritonops", into / "tritonops",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    return into


def outside_env() -> dict[str, str]:
    """This environment without what would make the checkout importable."""
    return {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}


def run(argv, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(arg) for arg in argv], cwd=cwd, env=outside_env(), capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A virtual environment holding only the wheel of this tree (its dependencies through a .pth file)."""
    work = tmp_path_factory.mktemp("wheel-install")
    wheels, venv = work / "wheels", work / "venv"
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels,
                 source_tree(Path(tmp_path_factory.mktemp("sdist")))], cwd=work)
    assert built.returncode == 0, built.stderr
    [wheel] = wheels.glob("tritonops-*.whl")
    made = run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=work)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    added = run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel],
                cwd=work)
    assert added.returncode == 0, added.stderr
    found = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=work)
    # listed after the new environment's own site-packages, so its tritonops comes first; a directory named
    # in a .pth file has its own .pth files left unread, so an editable install of the checkout stays out
    dependencies = Path(found.stdout.strip()) / "tritonops-test-dependencies.pth"
    dependencies.write_text("\n".join(site.getsitepackages()) + "\n")
    return venv


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """A working directory outside the checkout, with no playbooks/ or roles/ of its own."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


@pytest.fixture
def clean_deployment(lab_ssh):
    lab_ssh(FULL_2080TI, f"rm -rf {ROOT}/{DEPLOYMENT}")
    yield
    lab_ssh(FULL_2080TI, f"rm -rf {ROOT}/{DEPLOYMENT}")


def test_the_installed_package_is_the_wheel_not_the_checkout(installed, elsewhere):
    shown = run([installed / "bin" / "python", "-c", "import tritonops; print(tritonops.__file__)"], cwd=elsewhere)
    assert shown.returncode == 0, shown.stderr
    location = Path(shown.stdout.strip()).resolve()
    assert location.is_relative_to(installed.resolve()) and not location.is_relative_to(CHECKOUT), location


def test_a_deploy_from_the_installed_wheel_leaves_a_release(lab, lab_ssh, installed, elsewhere, clean_deployment):
    deploy = run([installed / "bin" / "tritonops", "deploy", "-i", lab.inventory_file, "--limit", FULL_2080TI,
                  "-e", json.dumps({"tritonops_deployment": DEPLOYMENT, "tritonops_serve": False}),
                  "--audit-log", "none"], cwd=elsewhere, timeout=900)
    assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]
    listed = lab_ssh(FULL_2080TI, f"ls {ROOT}/{DEPLOYMENT}/releases").stdout.split()
    assert [name for name in listed if not name.startswith(".")], listed
