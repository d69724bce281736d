"""Where a deploy finds its playbook and roles when none is named (tritonops/playbook/shipped.py):
a project's own playbooks/ and roles/ first, then the ones inside the installed package, so a run
from any folder, outside a checkout, finds the whole deploy."""

from pathlib import Path

import pytest

import tritonops
from tritonops.cli.cmd_deploy import default_playbook, default_roles_path
from tritonops.playbook import load_playbook
from tritonops.playbook.shipped import SHIPPED_PLAYBOOKS, SHIPPED_ROLES, playbook_path, roles_path

PACKAGE = Path(tritonops.__file__).resolve().parent


def project(tmp_path, playbook="deploy.yml", roles=True):
    (tmp_path / "playbooks").mkdir()
    (tmp_path / "playbooks" / playbook).write_text("- hosts: all\n  roles: [preflight]\n")
    if roles:
        (tmp_path / "roles").mkdir()
    return tmp_path


def test_the_playbooks_and_roles_ship_inside_the_package():
    assert SHIPPED_PLAYBOOKS == PACKAGE / "playbooks" and SHIPPED_ROLES == PACKAGE / "roles"
    assert {"deploy.yml", "rollback.yml"} <= {path.name for path in SHIPPED_PLAYBOOKS.iterdir()}


def test_a_project_of_ones_own_comes_before_the_shipped_playbook(tmp_path):
    own = project(tmp_path)
    assert playbook_path("deploy.yml", own) == own / "playbooks" / "deploy.yml"
    assert playbook_path("rollback.yml", own) == SHIPPED_PLAYBOOKS / "rollback.yml"


def test_the_own_playbook_is_found_in_the_working_directory_and_shown_relative(tmp_path, monkeypatch):
    monkeypatch.chdir(project(tmp_path))
    assert default_playbook("deploy.yml") == "playbooks/deploy.yml"


def test_without_a_playbook_anywhere_the_shipped_path_is_the_one_named(tmp_path):
    assert playbook_path("no-such.yml", tmp_path) == SHIPPED_PLAYBOOKS / "no-such.yml"


def test_roles_beside_the_playbooks_folder_come_before_the_shipped_roles(tmp_path):
    own = project(tmp_path)
    assert roles_path(own / "playbooks" / "deploy.yml") == (str(own / "roles"), str(SHIPPED_ROLES))


def test_a_project_without_roles_uses_the_shipped_ones(tmp_path):
    own = project(tmp_path, roles=False)
    assert roles_path(str(own / "playbooks" / "deploy.yml")) == (str(SHIPPED_ROLES),)


def test_the_shipped_playbook_names_the_shipped_roles_once():
    assert default_roles_path(str(SHIPPED_PLAYBOOKS / "deploy.yml")) == (str(SHIPPED_ROLES),)


@pytest.mark.parametrize("name", ["deploy.yml", "rollback.yml", "probe.yml"])
def test_from_a_folder_outside_any_checkout_every_shipped_playbook_loads_with_its_roles(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    playbook = default_playbook(name)
    loaded = load_playbook(playbook, roles_path=default_roles_path(playbook))
    roles = [Path(role.path) for play in loaded.plays for role in play.roles]
    assert roles and all(role.parent == SHIPPED_ROLES for role in roles)
