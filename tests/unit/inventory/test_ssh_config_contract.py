"""The two private paramiko hooks tritonops.inventory.safe_ssh_config overrides still exist and are called
the way it expects (paramiko is pinned below 6 in pyproject.toml for this reason)."""

import inspect

import paramiko

from tritonops.inventory.safe_ssh_config import SafeSshConfig


def test_paramiko_hooks_have_the_arguments_we_override():
    does_match = inspect.signature(paramiko.SSHConfig._does_match)
    tokenize = inspect.signature(paramiko.SSHConfig._tokenize)
    assert list(does_match.parameters) == ["self", "match_list", "target_hostname", "canonical", "final", "options"]
    assert list(tokenize.parameters) == ["self", "config", "target_hostname", "key", "value"]


def test_lookup_goes_through_our_hooks(tmp_path):
    config = SafeSshConfig(str(tmp_path / "config"))
    config.parse(iter(['Match exec "true"\n', "  User through-exec\n", "Host *\n", "  ProxyCommand nc %h %p\n"]))
    found = config.lookup("example")
    assert found["user"] == "through-exec"
    assert found["proxycommand"] == "nc %h %p"  # left for the transport to expand, quoted
