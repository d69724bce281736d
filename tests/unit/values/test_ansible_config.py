"""Ansible's configuration and connection options (issue #45 item 7): ansible.cfg found where Ansible looks, its
[defaults] inventory, remote_user, private_key_file, forks, host_key_checking and [privilege_escalation] become under
Ansible's environment variables, under the command line (-i, -u, --private-key, -b, -f), and for the connection
under the inventory's own variables, as in Ansible."""

import json
import os
import re

import pytest

from tests.support.paths import FIXTURES
from tritonops.cli.main import main
from tritonops.errors import InputError
from tritonops.values.ansible_cfg import ansible_config, config_file

HOSTS = "all:\n  hosts:\n    h1: {ansible_host: 10.0.0.1}\n    h2: {ansible_host: 10.0.0.2, ansible_user: maria}\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with an inventory and an ansible.cfg naming it, as the working folder; no ANSIBLE_* set."""
    for name in list(os.environ):
        if name.startswith("ANSIBLE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    (tmp_path / "project" / "inventory").mkdir(parents=True)
    (tmp_path / "project" / "inventory" / "hosts.yml").write_text(HOSTS)
    (tmp_path / "project" / "ansible.cfg").write_text(
        "[defaults]\ninventory = inventory/hosts.yml\nremote_user = deploy\nprivate_key_file = ~/.ssh/fleet\n"
        "forks = 3\nhost_key_checking = False\n\n[privilege_escalation]\nbecome = True\n")
    monkeypatch.chdir(tmp_path / "project")
    return tmp_path / "project"


def host(capsys, name: str, *argv: str) -> dict:
    assert main(["inventory", "--host", name, "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_file_is_the_first_of_ansible_config_the_working_folder_home_and_etc(project, tmp_path):
    home = str(tmp_path / "home")
    assert config_file({}, str(project), home) == str(project / "ansible.cfg")
    (tmp_path / "home" / ".ansible.cfg").write_text("[defaults]\nforks = 7\n")
    assert config_file({}, str(tmp_path), home) == str(tmp_path / "home" / ".ansible.cfg")
    assert config_file({"ANSIBLE_CONFIG": str(tmp_path / "home" / ".ansible.cfg")}, str(project), home) == \
        str(tmp_path / "home" / ".ansible.cfg")
    os.chmod(project, 0o777)  # Ansible ignores an ansible.cfg in a world-writable folder, and so do we
    try:
        assert config_file({}, str(project), home) == str(tmp_path / "home" / ".ansible.cfg")
    finally:
        os.chmod(project, 0o755)


def test_its_settings_with_paths_relative_to_its_folder_and_the_environment_above_it(project, tmp_path):
    found = ansible_config({}, str(project), str(tmp_path / "home"))
    assert (found.inventory, found.remote_user, found.forks, found.host_key_checking, found.become) == (
        (str(project / "inventory" / "hosts.yml"),), "deploy", 3, False, True)
    assert found.private_key_file == str(tmp_path / "home" / ".ssh" / "fleet")
    assert found.where["forks"] == "ansible.cfg:5" and found.where["become"] == "ansible.cfg:9"
    env = {"ANSIBLE_INVENTORY": "a.yml,b.yml", "ANSIBLE_FORKS": "12", "ANSIBLE_REMOTE_USER": "ops"}
    found = ansible_config(env, str(project), str(tmp_path / "home"))
    assert (found.inventory, found.forks, found.remote_user) == (
        (str(project / "a.yml"), str(project / "b.yml")), 12, "ops")
    assert found.where["forks"] == "$ANSIBLE_FORKS"


@pytest.mark.parametrize("line, said", [
    ("forks = many", r"^ansible.cfg:2: forks must be a whole number of 1 or more, not 'many'$"),
    ("host_key_checking = maybe", r"^ansible.cfg:2: host_key_checking must be true or false, not 'maybe'$"),
    ("remote_user = two words", r"^ansible.cfg:2: remote_user must be one word, not 'two words'$"),
])
def test_a_value_ansible_would_not_take_is_one_line_naming_the_file_and_line(project, tmp_path, line, said):
    (project / "ansible.cfg").write_text(f"[defaults]\n{line}\n")
    with pytest.raises(InputError) as caught:
        ansible_config({}, str(project), str(tmp_path / "home"))
    assert str(caught.value).count("\n") == 0
    assert re.match(said, str(caught.value)), str(caught.value)


def test_without_i_the_inventory_is_ansible_cfgs_and_its_connection_settings_are_under_the_inventorys(
        project, capsys):
    h1, h2 = host(capsys, "h1"), host(capsys, "h2")
    assert (h1["_connection"]["user"], h2["_connection"]["user"]) == ("deploy", "maria")  # ansible_user wins
    assert h1["sources"]["ansible_user"] == "Ansible's configuration (ansible.cfg:3)"
    assert h1["vars"]["ansible_become"] is True and h1["_connection"]["key_files"][0].endswith("/.ssh/fleet")
    cli = host(capsys, "h1", "-u", "ops", "--private-key", "/keys/ops")  # the command line over ansible.cfg
    assert cli["_connection"]["user"] == "ops" and cli["sources"]["ansible_user"] == "command line"
    assert cli["_connection"]["key_files"][0] == "/keys/ops"
    assert host(capsys, "h2", "-u", "ops")["_connection"]["user"] == "maria"  # still under the inventory's


def test_ansible_inventory_names_the_inventory_and_i_is_above_it(project, capsys, monkeypatch, tmp_path):
    other = tmp_path / "other.yml"
    other.write_text("all:\n  hosts:\n    o1: {ansible_host: 10.0.0.9}\n")
    monkeypatch.setenv("ANSIBLE_INVENTORY", str(other))
    assert host(capsys, "o1")["vars"]["ansible_host"] == "10.0.0.9"
    assert host(capsys, "h1", "-i", "inventory/hosts.yml")["vars"]["ansible_host"] == "10.0.0.1"


def test_forks_and_host_key_checking_come_from_ansible_cfg_under_the_command_line(project):
    from argparse import Namespace

    from tritonops.cli.selection import apply_ansible_config

    args = Namespace(inventory=[], forks=None, accept_new_host_keys=False, user=None, private_key=None, become=False)
    apply_ansible_config(args, env={})
    assert (args.forks, args.accept_new_host_keys) == (3, True)  # host_key_checking = False: new keys, never changed
    given = Namespace(inventory=["x"], forks=20, accept_new_host_keys=False, user=None, private_key=None, become=False)
    apply_ansible_config(given, env={})
    assert (given.inventory, given.forks) == (["x"], 20)


def test_plan_probes_with_the_connection_defaults_as_deploy_does(project, capsys):
    """`plan` without --facts probes the hosts itself: as the user ansible.cfg and -u name (api.plan took none of
    them and connected as the inventory alone said)."""
    (project / "inventory" / "hosts.yml").write_text(
        "all:\n  hosts:\n    h1: {ansible_host: 127.0.0.1, ansible_port: 1}\n")  # nothing listens: refused at once
    argv = ["plan", "--model", str(FIXTURES / "models" / "tiny-llama"), "--json"]
    assert main(argv) == 4
    assert "cannot connect to deploy@127.0.0.1:1" in json.loads(capsys.readouterr().out)["results"][0]["msg"]
    assert main([*argv, "-u", "carol"]) == 4
    assert "cannot connect to carol@127.0.0.1:1" in json.loads(capsys.readouterr().out)["results"][0]["msg"]
