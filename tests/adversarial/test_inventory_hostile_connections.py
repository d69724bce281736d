"""Connection values from inventories, SSH arguments, ~/.ssh/config and the command line are checked
where they are read: nothing that could become an option or a shell command gets through, and
`Match exec` in an SSH config never runs a shell."""

import os
import textwrap
from pathlib import Path

import pytest

from tritonops.errors import InputError
from tritonops.inventory import load_inventory, spec_from_target

HOSTILE_HOSTS = [
    "x:22 -oProxyCommand=touch${IFS}/tmp/p -oUser=",
    "127.0.0.9;touch${IFS}/tmp/p",
    "-oProxyCommand=touch /tmp/p",
    "host name",
    "a$(touch /tmp/p)",
    "a`touch /tmp/p`",
    "a\nb",
    "a\x1b]0;title\x07",
    "a'b",
    'a"b',
    "a|b",
    "a&b",
    "a>b",
    "%h",
    "wëb",
    "",
    "a" * 254,
]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def yaml_host(tmp_path, variables: dict, name: str = "h1", ssh_config: str | None = None):
    import yaml
    inventory = write(tmp_path, "inv/hosts.yml", yaml.safe_dump({"all": {"hosts": {name: variables or None}}}))
    config = str(write(tmp_path, "ssh_config", ssh_config)) if ssh_config is not None else os.devnull
    return load_inventory([str(inventory)], ssh_config_file=config)


@pytest.mark.parametrize("value", HOSTILE_HOSTS)
def test_hostile_ansible_host_is_refused_at_its_line(tmp_path, value):
    with pytest.raises(InputError) as caught:
        yaml_host(tmp_path, {"ansible_host": value})
    assert caught.value.where == f"{tmp_path / 'inv' / 'hosts.yml'}:4"
    assert "\n" not in str(caught.value) and "\x1b" not in str(caught.value)


@pytest.mark.parametrize("value", [v for v in HOSTILE_HOSTS if v])
def test_hostile_host_name_used_as_address_is_refused_where_it_is_declared(tmp_path, value):
    with pytest.raises(InputError) as caught:
        yaml_host(tmp_path, {}, name=value)
    assert caught.value.where.startswith(str(tmp_path / "inv" / "hosts.yml"))


def test_a_hostile_host_name_is_fine_when_it_is_only_a_label(tmp_path):
    inventory = yaml_host(tmp_path, {"ansible_host": "10.0.0.1"}, name="[/x] :smile: $(x)")
    assert inventory.hosts[0].connection.host == "10.0.0.1"


@pytest.mark.parametrize("variables, problem", [
    ({"ansible_user": "root -oProxyCommand=x"}, "SSH user"),
    ({"ansible_user": "-oProxyCommand=x"}, "SSH user"),
    ({"ansible_user": "ro'ot"}, "SSH user"),
    ({"ansible_user": ""}, "SSH user"),
    ({"ansible_port": "22 -oProxyCommand=x"}, "port must be a number"),
    ({"ansible_port": 0}, "port must be at least 1"),
    ({"ansible_port": 22.5}, "whole number"),
    ({"ansible_port": True}, "port must be a number"),
    ({"ansible_ssh_common_args": "-o User=a;b"}, "SSH user"),
    ({"ansible_ssh_common_args": "-l '$(id)'"}, "SSH user"),
    ({"ansible_ssh_common_args": "-J 'bastion;touch /tmp/p'"}, "host address"),
    ({"ansible_ssh_common_args": "-J ops@bastion:http"}, "port must be a number"),
    ({"ansible_ssh_common_args": "-J a,,b"}, "empty hop"),
    ({"ansible_ssh_common_args": "-o ProxyJump=-oProxyCommand=x"}, "host address"),
    ({"ansible_ssh_common_args": "-o ConnectTimeout=1e999"}, "finite"),
])
def test_hostile_connection_settings_are_refused_naming_the_line(tmp_path, variables, problem):
    with pytest.raises(InputError) as caught:
        yaml_host(tmp_path, variables)
    assert problem in caught.value.what
    assert caught.value.where == f"{tmp_path / 'inv' / 'hosts.yml'}:4"


@pytest.mark.parametrize("target", HOSTILE_HOSTS + ["root;id@host", "root@host:22;id", "root@[::1;id]:22"])
def test_hostile_command_line_targets_are_refused(target):
    with pytest.raises(InputError) as caught:
        spec_from_target(target, ssh_config_file=os.devnull)
    assert caught.value.where == "command line"


@pytest.mark.parametrize("config_line, problem", [
    ("HostName bad;touch /tmp/p", "host address"),
    ("User -oProxyCommand=x", "SSH user"),
    ("Port 99999", "at most 65535"),
    ("ProxyJump bastion;id", "host address"),
])
def test_hostile_ssh_config_values_are_refused_naming_the_file(tmp_path, config_line, problem):
    with pytest.raises(InputError) as caught:
        yaml_host(tmp_path, {}, ssh_config=f"Host h1\n  {config_line}\n")
    assert problem in caught.value.what
    assert str(tmp_path / "ssh_config") in caught.value.where


def test_proxy_none_in_ssh_config_means_no_proxy(tmp_path):
    inventory = yaml_host(tmp_path, {}, ssh_config="Host h1\n  ProxyJump none\nHost *\n  ProxyJump bastion\n")
    assert inventory.hosts[0].connection.proxy_jump is None


def match_exec_config(tmp_path, command: str) -> str:
    return textwrap.dedent(f"""
        Match exec "{command}"
          User matched
        """)


def test_match_exec_runs_without_a_shell_and_substitutes_inside_one_argument(tmp_path):
    record = tmp_path / "argv"
    script = write(tmp_path, "record.sh", f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    script.chmod(0o755)
    inventory = yaml_host(tmp_path, {"ansible_host": "10.0.0.7"},
                          ssh_config=match_exec_config(tmp_path, f"{script} host=%h 'two words'"))
    assert inventory.hosts[0].connection.user == "matched"
    assert record.read_text().splitlines() == ["host=10.0.0.7", "two words"]


def test_match_exec_that_fails_does_not_match(tmp_path):
    inventory = yaml_host(tmp_path, {}, ssh_config=match_exec_config(tmp_path, "false"))
    assert inventory.hosts[0].connection.user is None
    inventory = yaml_host(tmp_path, {}, ssh_config=match_exec_config(tmp_path, "/nonexistent/program"))
    assert inventory.hosts[0].connection.user is None


@pytest.mark.parametrize("command", ["nc -z %h 22 2>/dev/null", "test -f /x && true", "a | b", "echo $(id)",
                                     "echo ${HOME}", "a; b"])
def test_match_exec_that_needs_a_shell_is_refused_with_a_reason(tmp_path, command):
    canary = tmp_path / "canary"
    with pytest.raises(InputError) as caught:
        yaml_host(tmp_path, {}, ssh_config=match_exec_config(tmp_path, command.replace("/x", str(canary))))
    assert "without a shell" in caught.value.what and "Match exec" in caught.value.where
    assert not canary.exists()


def test_match_exec_after_a_failed_criterion_does_not_run(tmp_path):
    canary = tmp_path / "canary"
    config = f'Match host other exec "touch {canary}"\n  User x\n'
    assert yaml_host(tmp_path, {}, ssh_config=config).hosts[0].connection.user is None
    assert not canary.exists()


def test_an_ssh_config_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    inventory = write(tmp_path, "hosts.ini", "h1\n")
    with pytest.raises(InputError, match="not a regular file"):
        load_inventory([str(inventory)], ssh_config_file=str(fifo))


@pytest.mark.parametrize("command, problem", [("ssh -W %h:%q bastion", "%q"), ("ssh -W %h:%p bastion 100%", "%")])
def test_a_proxy_command_the_transport_cannot_expand_is_refused_at_its_line(tmp_path, command, problem):
    with pytest.raises(InputError) as caught:
        yaml_host(tmp_path, {"ansible_ssh_common_args": f"-o ProxyCommand='{command}'"})
    assert problem in caught.value.what
    assert caught.value.where == f"{tmp_path / 'inv' / 'hosts.yml'}:4"
