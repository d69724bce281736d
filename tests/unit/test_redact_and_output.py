"""Secrets never reach output, and user text is printed as text: no markup, no emoji, no escapes."""

import json

import pytest

from tritonops.cli.main import main
from tritonops.redact import HIDDEN, is_secret_name, redact_text, redact_value


@pytest.mark.parametrize("text, secret", [
    ("pip install --index-url https://bob:s3cr3t@pypi.corp/simple vllm", "s3cr3t"),
    ("--extra-index-url=https://u:p%40ss@host/simple", "p%40ss"),
    ("ssh -W %h:%p -o 'ProxyCommand=x --token=abc123' bastion", "abc123"),
    ("curl -H 'Authorization: Bearer eyJhbGciOi.x.y'", "eyJhbGciOi"),
    ("password=hunter2 and more", "hunter2"),
    ("token: abcdef", "abcdef"),
    ("HF_TOKEN='xyz987'", "xyz987"),
    ('{"api_key": "sk-123"}', "sk-123"),
    ("--password hunter2 --other v", "hunter2"),
    ("--hf-token hf_0123456789abcdefghij", "0123456789abcdef"),
    ("uses hf_0123456789abcdefghijKLMN in the url", "0123456789abcdef"),
    ("ghp_0123456789abcdefghij0123", "0123456789abcdef"),
])
def test_secrets_in_text_are_masked(text, secret):
    shown = redact_text(text)
    assert secret not in shown and "****" in shown


@pytest.mark.parametrize("text", [
    '"max_num_batched_tokens": 8192,', "--max-num-batched-tokens 8192", '"kv_bytes_per_token": 12',
    '"password_set": false', "tritonops_hf_token_file: /root/.hf", "passwords are hashed",
    "https://pypi.corp/simple", "user@host:22", "the 32768-token target; vLLM",
])
def test_ordinary_text_is_left_alone(text):
    assert redact_text(text) == text


@pytest.mark.parametrize("name, secret", [
    ("ansible_password", True), ("ansible_sudo_password", True), ("ansible_become_pass", True),
    ("tritonops_hf_token", True), ("db_secret", True), ("OPENAI_API_KEY", True),
    ("tritonops_hf_token_file", False), ("ansible_ssh_private_key_file", False), ("max_num_batched_tokens", False),
    ("tritonops_model", False),
])
def test_secret_variable_names(name, secret):
    assert is_secret_name(name) is secret


def test_values_are_hidden_by_name_and_masked_inside():
    assert redact_value("ansible_sudo_password", "x") == HIDDEN
    assert redact_value("extra", {"db_password": "x", "url": "https://a:b@h/"}) == {"db_password": HIDDEN,
                                                                                  "url": "https://a:****@h/"}


SECRETS = ("sudo-s3cret", "idx-s3cret", "extra-s3cret", "proxy-s3cret", "become-s3cret")


@pytest.fixture
def secret_inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(f"""
all:
  hosts:
    h1:
      ansible_host: 10.0.0.1
      ansible_sudo_password: {SECRETS[0]}
      ansible_become_pass: {SECRETS[4]}
      tritonops_pip_index_url: https://ci:{SECRETS[1]}@pypi.corp/simple
      tritonops_pip_extra_args: --trusted-host pypi.corp --password {SECRETS[2]}
      ansible_ssh_common_args: -o ProxyCommand="ssh -W %h:%p bastion --token={SECRETS[3]}"
""")
    return str(path)


@pytest.mark.parametrize("argv", [["--host", "h1"], ["--host", "h1", "-v"], ["--host", "h1", "--json"], ["--json"],
                                  ["--list"], ["--graph"], ["--list", "-v"]])
def test_no_inventory_view_shows_a_secret(capsys, secret_inventory, argv):
    assert main(["inventory", "-i", secret_inventory, *argv]) == 0
    captured = capsys.readouterr()
    for secret in SECRETS:
        assert secret not in captured.out + captured.err
    if "--json" in argv:
        json.loads(captured.out)  # masking keeps JSON valid


def test_an_error_quoting_a_secret_is_masked(capsys, secret_inventory):
    assert main(["inventory", "-i", secret_inventory, "--limit", "https://u:pw-s3cret@host"]) != 0
    captured = capsys.readouterr()
    assert "pw-s3cret" not in captured.err and captured.err.startswith("error:")


@pytest.fixture
def odd_names_inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(
        'all:\n  hosts:\n'
        '    "[/x]":\n      ansible_host: 10.0.0.1\n'
        '    "[bold red]loud[/]":\n      ansible_host: 10.0.0.2\n'
        '    ":smile:":\n      ansible_host: 10.0.0.3\n'
        '    "esc\\e]0;pwned\\a\\e[31mred":\n      ansible_host: 10.0.0.4\n')
    return str(path)


def test_host_names_with_markup_emoji_and_escapes_print_as_text(capsys, odd_names_inventory):
    assert main(["inventory", "-i", odd_names_inventory, "--list"]) == 0
    out = capsys.readouterr().out
    assert "[/x]" in out and "[bold red]loud[/]" in out and ":smile:" in out
    assert "\x1b" not in out and "\x07" not in out
    assert "escred" in out and "pwned" not in out  # the whole OSC sequence is gone, not just its ESC
    assert "😄" not in out


@pytest.mark.parametrize("argv", [["--limit", "[/x"], ["--limit", "[bold]nope[/]"], ["--host", "[/y]"],
                                  ["--limit", "\x1b[2Jwipe"]])
def test_errors_about_user_text_are_one_plain_line(capsys, odd_names_inventory, argv):
    code = main(["inventory", "-i", odd_names_inventory, *argv])
    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "\x1b" not in err
    shown = argv[-1].replace("\x1b", "")
    assert shown.strip("[]/") in err  # the bracketed text is still there, not swallowed as markup


def test_size_with_a_bracketed_gpu_name_is_a_plain_error(capsys):
    code = main(["size", "--model", "Qwen/Qwen2.5-0.5B-Instruct", "--gpu", "[/x]"])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("error: ") and "[/x]" in err and err.count("\n") == 1
