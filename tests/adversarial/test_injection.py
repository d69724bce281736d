"""Injection suite: hostile text in every value that can reach a command line, here or on a host,
through the real CLI. A canary file must never appear; each run ends in a result or one error line.

Values reach command lines through: the SSH target (address, user, port), ProxyCommand %-tokens
(%h %p %r %n), ProxyJump hops, `Match exec` in an SSH config, --limit, and names that become paths
(--model-name). Remote commands are fixed programs fed on stdin (the probe) and argument lists
(docker, pip in the image build: tests/unit/image/test_core.py runs its hostile pip quoting in a sandbox)."""

import shlex
from pathlib import Path

import pytest
import yaml

from tests.support.paths import FIXTURES
from tritonops.cli.main import main


def payloads(canary: Path) -> list[str]:
    c = str(canary)
    return [
        f";touch {c}", f"$(touch {c})", f"`touch {c}`", f"\ntouch {c}", f"|touch {c}", f"&& touch {c}",
        f"x -oProxyCommand=touch${{IFS}}{c} -oUser=", f"-oProxyCommand=touch {c}", f"%h;touch {c}",
        f"'; touch {c}; '", f'"; touch {c}; "', f"＄(touch {c})", f"\x1b]0;x\x07;touch {c}", f"x\r\ntouch {c}",
        f"x%n;touch {c}", f"--x=$(touch {c})",
    ]


def canary_path(tmp_path: Path) -> Path:
    return tmp_path / "CANARY"


FIELDS = ["ansible_host", "name", "ansible_user", "ansible_port", "user_option", "port_option", "jump",
          "label_with_proxy_command", "label_with_match_exec", "limit", "target", "model_name"]


def inventory_for(tmp_path: Path, field: str, payload: str) -> tuple[str, str, list[str]]:
    """(inventory path, ssh config path, extra CLI arguments) putting `payload` into `field`."""
    name, variables, extra = "h1", {"ansible_host": "127.0.0.1", "ansible_port": 1}, []
    ssh_config = ""
    record = tmp_path / "proxy-saw"
    if field == "ansible_host":
        variables["ansible_host"] = payload
    elif field == "name":
        name = payload
        variables.pop("ansible_host")
    elif field == "ansible_user":
        variables["ansible_user"] = payload
    elif field == "ansible_port":
        variables["ansible_port"] = payload
    elif field == "user_option":
        variables["ansible_ssh_common_args"] = f"-o User={shlex.quote(payload)}"
    elif field == "port_option":
        variables["ansible_ssh_common_args"] = f"-p {shlex.quote(payload)}"
    elif field == "jump":
        variables["ansible_ssh_common_args"] = f"-J {shlex.quote(payload)}"
    elif field == "label_with_proxy_command":
        name = payload  # a label only, but it reaches the ProxyCommand as %n
        variables["ansible_ssh_common_args"] = f"-o ProxyCommand=\"printf %%s %n > {record}\""
    elif field == "label_with_match_exec":
        name = payload
        ssh_config = 'Match exec "test %n = x"\n  User matched\n'
    elif field == "limit":
        extra = ["--limit", payload]
    elif field == "model_name":
        name, variables = "localhost", {"ansible_connection": "local"}  # the host of the saved facts
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {name: variables}}}))
    config = tmp_path / "ssh_config"
    config.write_text(ssh_config)
    return str(path), str(config), extra


@pytest.mark.parametrize("field", FIELDS)
def test_no_hostile_value_runs_a_command(tmp_path, capsys, monkeypatch, field):
    canary = canary_path(tmp_path)
    tried = proxied = 0
    for payload in payloads(canary):
        inventory, ssh_config, extra = inventory_for(tmp_path, field, payload)
        monkeypatch.setenv("TRITONOPS_SSH_CONFIG", ssh_config)
        runs = [["inventory", "-i", inventory, "--list", *extra],
                ["probe", "-i", inventory, "--timeout", "5", *extra]]
        if field == "target":
            runs = [["probe", payload, "--timeout", "5"]]
        if field == "model_name":
            runs = [["plan", "-i", inventory, "--facts", str(FIXTURES / "real" / "h200x2" / "probe-local-idle.json"),
                     "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--model-name", payload]]
        for argv in runs:
            code = main(argv)
            captured = capsys.readouterr()
            tried += 1
            assert not canary.exists(), f"{field}: {payload!r} ran a command via {argv[0]}"
            assert "Traceback" not in captured.err
            if code != 0 and captured.err:
                assert captured.err.startswith("error: ") and captured.err.count("\n") == 1, captured.err
            assert "\x1b]" not in captured.out + captured.err
            if field == "model_name":
                assert code != 0 and "model name" in captured.err
        saw = tmp_path / "proxy-saw"
        if saw.exists():  # the ProxyCommand ran: it must have received the label as one literal word
            assert saw.read_text() == payload.replace("\r\n", "\n")  # YAML itself normalises line breaks
            saw.unlink()
            proxied += 1
    assert tried >= len(payloads(canary))
    if field == "label_with_proxy_command":  # labels are free text: most payloads reach the proxy, quoted
        assert proxied >= len(payloads(canary)) // 2



@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0", "1e9"])
def test_probe_waits_are_bounded(capsys, value):
    assert main(["probe", "--local", "--timeout", value]) != 0
    err = capsys.readouterr().err
    assert err.startswith("error: --timeout") and err.count("\n") == 1
