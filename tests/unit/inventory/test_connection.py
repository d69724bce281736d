"""How each host is reached: inventory variables, SSH arguments, then the SSH client config."""

import os
import textwrap
from pathlib import Path

import pytest

from tritonops.errors import InputError
from tritonops.inventory import load_inventory, spec_from_target


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def one_host(tmp_path, host_vars: str, ssh_config: str | None = None, **kwargs):
    """Load an inventory with a single host 'h1' whose INI line carries `host_vars`."""
    inventory = write(tmp_path, "inv/hosts.ini", f"[gpu]\nh1 {host_vars}\n")
    config = str(write(tmp_path, "ssh_config", ssh_config)) if ssh_config is not None else os.devnull
    return load_inventory([str(inventory)], ssh_config_file=config, **kwargs).host("h1").connection


def test_defaults_without_any_settings(tmp_path):
    spec = one_host(tmp_path, "")
    assert (spec.name, spec.host, spec.port, spec.user, spec.key_files) == ("h1", "h1", None, None, ())
    assert spec.strict_host_key_checking == "yes"
    assert spec.connect_timeout_s == 10.0
    assert not spec.local and spec.proxy_command is None and spec.proxy_jump is None


def test_ansible_connection_variables(tmp_path):
    spec = one_host(tmp_path, "ansible_host=10.0.0.5 ansible_port=2222 ansible_user=ubuntu "
                              "ansible_ssh_private_key_file=keys/fleet")
    assert (spec.host, spec.port, spec.user) == ("10.0.0.5", 2222, "ubuntu")
    assert spec.key_files == (str(tmp_path / "inv" / "keys" / "fleet"),)  # relative to the inventory


def test_key_in_group_vars_is_relative_to_the_inventory_folder_and_tilde_expands(tmp_path):
    write(tmp_path, "inv/hosts.yml", "gpu:\n  hosts:\n    h1:\n    h2:\n      ansible_ssh_private_key_file: ~/.ssh/h2\n")
    write(tmp_path, "inv/group_vars/gpu.yml", "ansible_ssh_private_key_file: keys/gpu\n")
    inventory = load_inventory([str(tmp_path / "inv" / "hosts.yml")], ssh_config_file=os.devnull)
    assert inventory.host("h1").connection.key_files == (str(tmp_path / "inv" / "keys" / "gpu"),)
    assert inventory.host("h2").connection.key_files == (os.path.expanduser("~/.ssh/h2"),)
    assert os.path.expanduser("~") != "~"


def test_password_is_kept_but_never_shown(tmp_path):
    write(tmp_path, "inv/hosts.yml", "all:\n  hosts:\n    h1:\n      ansible_password: s3cret\n")
    host = load_inventory([str(tmp_path / "inv" / "hosts.yml")], ssh_config_file=os.devnull).host("h1")
    assert host.connection.password == "s3cret"
    assert "s3cret" not in repr(host.connection)
    assert "s3cret" not in repr(host)


def test_old_ansible_spellings_are_accepted(tmp_path):
    spec = one_host(tmp_path, "ansible_ssh_host=10.1.1.1 ansible_ssh_port=2200 ansible_ssh_user=ops ansible_ssh_pass=pw")
    assert (spec.host, spec.port, spec.user, spec.password) == ("10.1.1.1", 2200, "ops", "pw")


def test_local_connection(tmp_path):
    spec = one_host(tmp_path, "ansible_connection=local", ssh_config="Host h1\n  HostName 192.0.2.9\n")
    assert spec.local is True
    assert spec.host == "h1"  # the SSH config does not apply to a local host


def test_unsupported_connection_names_the_line(tmp_path):
    with pytest.raises(InputError) as caught:
        one_host(tmp_path, "ansible_connection=winrm")
    assert caught.value.where == f"{tmp_path / 'inv' / 'hosts.ini'}:2"
    assert "winrm" in caught.value.what


def test_proxy_command_known_hosts_timeout_port_and_key_from_common_args(tmp_path):
    args = ("'-o ProxyCommand=\"ssh -W %h:%p bastion\" -o UserKnownHostsFile=known/fleet "
            "-o StrictHostKeyChecking=accept-new -o ConnectTimeout=7 -p 2201 -i keys/extra "
            "-o ServerAliveInterval=30 -C'")
    spec = one_host(tmp_path, f"ansible_ssh_common_args={args}")
    assert spec.proxy_command == "ssh -W %h:%p bastion"
    assert spec.proxy_jump is None
    assert spec.known_hosts_file == str(tmp_path / "inv" / "known" / "fleet")
    assert spec.strict_host_key_checking == "accept-new"
    assert spec.connect_timeout_s == 7.0
    assert spec.port == 2201
    assert spec.key_files == (str(tmp_path / "inv" / "keys" / "extra"),)


@pytest.mark.parametrize("args", ["'-o ProxyJump=ops@jump:2222'", "'-J ops@jump:2222'", "-Jops@jump:2222",
                                  "'-o \"ProxyJump ops@jump:2222\"'"])
def test_proxy_jump_forms(tmp_path, args):
    spec = one_host(tmp_path, f"ansible_ssh_common_args={args}")
    assert spec.proxy_jump == "ops@jump:2222"
    assert spec.proxy_command is None


def test_first_value_wins_common_args_before_extra_args(tmp_path):
    spec = one_host(tmp_path, "ansible_ssh_common_args='-J first -p 2001' "
                              "ansible_ssh_extra_args='-o ProxyCommand=second -p 2002 -o ConnectTimeout=3'")
    assert spec.proxy_jump == "first" and spec.proxy_command is None
    assert spec.port == 2001
    assert spec.connect_timeout_s == 3.0


def test_explicit_variables_beat_ssh_args(tmp_path):
    spec = one_host(tmp_path, "ansible_port=22 ansible_user=root ansible_ssh_common_args='-p 2222 -l nobody "
                              "-o UserKnownHostsFile=/etc/a -o ConnectTimeout=5' "
                              "tritonops_known_hosts_file=/etc/b tritonops_connect_timeout=30")
    assert (spec.port, spec.user, spec.known_hosts_file, spec.connect_timeout_s) == (22, "root", "/etc/b", 30.0)


@pytest.mark.parametrize("value", ["no", "off"])
def test_disabling_host_key_checks_is_refused_at_its_line(tmp_path, value):
    inventory = write(tmp_path, "hosts.yml", f"""
        all:
          hosts:
            h1:
              ansible_ssh_extra_args: -o StrictHostKeyChecking={value}
        """)
    with pytest.raises(InputError) as caught:
        load_inventory([str(inventory)], ssh_config_file=os.devnull)
    assert caught.value.where == f"{inventory}:4"
    assert "never disables host-key checks" in caught.value.what


@pytest.mark.parametrize("host_vars, problem", [
    ("ansible_port=http", "port must be a number"),
    ("ansible_port=70000", "port must be at most 65535"),
    ("tritonops_connect_timeout=0", "timeout (seconds) must be more than 0"),
    ("tritonops_connect_timeout=inf", "must be a finite number"),
    ("tritonops_connect_timeout=nan", "must be a finite number"),
    ("tritonops_connect_timeout=86400", "must be at most 3600"),
    ("ansible_ssh_common_args='-o ConnectTimeout=inf'", "must be a finite number"),
    ("ansible_ssh_common_args='-o ProxyCommand=\"unclosed'", "cannot split SSH arguments"),
    ("ansible_ssh_common_args=-p", "needs a value"),
])
def test_bad_connection_values_name_the_line(tmp_path, host_vars, problem):
    with pytest.raises(InputError) as caught:
        one_host(tmp_path, host_vars)
    assert problem in caught.value.what
    assert caught.value.where == f"{tmp_path / 'inv' / 'hosts.ini'}:2"


SSH_CONFIG = """
Host 10.9.9.9
    Port 2022
    User from-config
    IdentityFile ~/.ssh/from_config
    UserKnownHostsFile /etc/ssh/fleet_known_hosts
    ProxyJump config-bastion

Host alias
    HostName 10.8.8.8
    ProxyCommand nc -X 5 -x proxy:1080 %h %p
"""


def test_ssh_config_fills_what_the_inventory_left_unset_looked_up_by_address(tmp_path):
    spec = one_host(tmp_path, "ansible_host=10.9.9.9", ssh_config=SSH_CONFIG)
    assert spec.host == "10.9.9.9"
    assert spec.port == 2022 and spec.user == "from-config"
    assert spec.key_files == (os.path.expanduser("~/.ssh/from_config"),)
    assert spec.known_hosts_file == "/etc/ssh/fleet_known_hosts"
    assert spec.proxy_jump == "config-bastion" and spec.proxy_command is None


def test_inventory_wins_over_ssh_config(tmp_path):
    spec = one_host(tmp_path, "ansible_host=10.9.9.9 ansible_port=22 ansible_user=inv "
                              "ansible_ssh_private_key_file=/k ansible_ssh_common_args='-o ProxyCommand=mine "
                              "-o UserKnownHostsFile=/kh'", ssh_config=SSH_CONFIG)
    assert (spec.port, spec.user, spec.key_files, spec.known_hosts_file) == (22, "inv", ("/k",), "/kh")
    assert spec.proxy_command == "mine" and spec.proxy_jump is None  # config's ProxyJump must not sneak in


def test_ssh_config_hostname_applies_only_without_ansible_host(tmp_path):
    inventory = write(tmp_path, "hosts.ini", "alias\nother ansible_host=alias\nfixed ansible_host=192.0.2.1\n")
    config = write(tmp_path, "ssh_config", SSH_CONFIG)
    loaded = load_inventory([str(inventory)], ssh_config_file=str(config))
    assert loaded.host("alias").connection.host == "10.8.8.8"
    # kept as written: the transport expands %h/%p itself, each value quoted (transport/proxy.py)
    assert loaded.host("alias").connection.proxy_command == "nc -X 5 -x proxy:1080 %h %p"
    assert loaded.host("other").connection.host == "alias"  # the inventory said which address to use
    assert loaded.host("fixed").connection.proxy_command is None


def test_explicit_ssh_config_means_home_config_is_never_read(tmp_path, monkeypatch):
    home = tmp_path / "home"
    write(home, ".ssh/config", "Host h1\n  User from-home\n  Port 4444\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("TRITONOPS_SSH_CONFIG", raising=False)
    inventory = str(write(tmp_path, "hosts.ini", "[gpu]\nh1\n"))
    # control: with no file given, the home config is what applies ...
    assert load_inventory([inventory]).host("h1").connection.user == "from-home"
    # ... and with a file given (or os.devnull) it is not read at all
    other = str(write(tmp_path, "ssh_config", "Host other\n  User x\n"))
    assert load_inventory([inventory], ssh_config_file=other).host("h1").connection.user is None
    assert load_inventory([inventory], ssh_config_file=os.devnull).host("h1").connection.port is None


def test_environment_names_the_ssh_config(tmp_path, monkeypatch):
    config = write(tmp_path, "env_config", "Host h1\n  User from-env\n")
    monkeypatch.setenv("TRITONOPS_SSH_CONFIG", str(config))
    inventory = write(tmp_path, "hosts.ini", "h1\n")
    assert load_inventory([str(inventory)]).host("h1").connection.user == "from-env"


def test_missing_explicit_ssh_config_is_an_error(tmp_path):
    inventory = write(tmp_path, "hosts.ini", "h1\n")
    with pytest.raises(InputError, match="SSH config file not found"):
        load_inventory([str(inventory)], ssh_config_file=str(tmp_path / "nope"))


@pytest.mark.parametrize("target, expected", [
    ("gpu1", (None, "gpu1", None)),
    ("root@gpu1", ("root", "gpu1", None)),
    ("gpu1:2222", (None, "gpu1", 2222)),
    ("ops@10.0.0.1:22", ("ops", "10.0.0.1", 22)),
    ("[2001:db8::1]:2222", (None, "2001:db8::1", 2222)),
    ("ops@[2001:db8::1]", ("ops", "2001:db8::1", None)),
    ("2001:db8::1", (None, "2001:db8::1", None)),
])
def test_spec_from_target(target, expected):
    spec = spec_from_target(target, ssh_config_file=os.devnull)
    assert (spec.user, spec.host, spec.port) == expected
    assert spec.name == target
    assert spec.strict_host_key_checking == "yes"


def test_spec_from_target_uses_the_ssh_config(tmp_path):
    config = write(tmp_path, "ssh_config", SSH_CONFIG)
    spec = spec_from_target("alias", ssh_config_file=str(config))
    assert spec.host == "10.8.8.8" and spec.name == "alias"
    spec = spec_from_target("me@10.9.9.9:23", ssh_config_file=str(config))
    assert (spec.user, spec.port, spec.proxy_jump) == ("me", 23, "config-bastion")


@pytest.mark.parametrize("target", ["", "root@", "gpu1:http", "[::1", "[::1]x", "@gpu1"])
def test_spec_from_target_rejects_nonsense(target):
    with pytest.raises(InputError):
        spec_from_target(target, ssh_config_file=os.devnull)
