"""ProxyCommand tokens expanded like OpenSSH but quoted, run through /bin/sh like OpenSSH; ProxyJump
hops checked like any target. No SSH server needed."""

import shlex
import subprocess
import time

import pytest

from tests.support.network import closed_port
from tritonops.errors import InputError
from tritonops.transport.base import Unreachable
from tritonops.transport.pool import run_on_hosts
from tritonops.transport.proxy import ProxyValues, expand_proxy_command, parse_jump_hops, proxy_command_line
from tritonops.transport.spec import ConnectionSpec
from tritonops.transport.ssh import ProxyProcess, SshTransport, _proxy_command_line
from tritonops.values.ssh_target import Target

GPU1 = ProxyValues(host="gpu1.example", port=2222, user="ops", name="gpu1")
HOSTILE = [
    "x; touch CANARY",
    "$(touch CANARY)",
    "`touch CANARY`",
    "x\ntouch CANARY",
    "x' ; touch CANARY ; '",
    'x" ; touch CANARY ; "',
    "x%h%p%%%r",
    "a && touch CANARY || touch CANARY",
    "x\\' ; touch CANARY",
]


def values(host: str) -> ProxyValues:
    return ProxyValues(host=host, port=22, user="root", name="gpu1")


def test_tokens_expand_like_openssh():
    assert expand_proxy_command("ssh -W %h:%p bastion", GPU1) == "ssh -W gpu1.example:2222 bastion"
    assert expand_proxy_command("ssh -l %r -W %h:%p jump # for %n", GPU1) == \
        "ssh -l ops -W gpu1.example:2222 jump # for gpu1"
    assert expand_proxy_command("nc -X 5 -x proxy:1080 %h %p", GPU1) == "nc -X 5 -x proxy:1080 gpu1.example 2222"
    assert expand_proxy_command("echo 100%% of %%h", GPU1) == "echo 100% of %h"


def test_each_value_is_quoted_and_never_expanded_twice():
    assert expand_proxy_command("nc %h %p", values("a b;c")) == "nc 'a b;c' 22"
    assert expand_proxy_command("nc %h %p", values("$(id)")) == "nc '$(id)' 22"
    assert expand_proxy_command("nc %h", values("`id`")) == "nc '`id`'"
    assert expand_proxy_command("nc %h", values("a\nid")) == "nc 'a\nid'"
    assert expand_proxy_command("nc %h", values("it's")) == "nc 'it'\"'\"'s'"
    # Substituted text is not read again: a value holding %p stays %p.
    assert expand_proxy_command("nc %h %p", values("x%p")) == "nc x%p 22"
    assert expand_proxy_command("nc %h", values("x%%")) == "nc x%%"


def test_a_value_inside_the_users_quotes_stays_inside_one_literal_word():
    assert expand_proxy_command("sh -c 'nc %h %p'", values("a;b")) == "sh -c 'nc ''a;b'' 22'"
    assert expand_proxy_command('echo "[%h]"', values("$(id)")) == "echo \"[\"'$(id)'\"]\""
    assert expand_proxy_command("echo '[%h]'", values("plain")) == "echo '[plain]'"
    assert expand_proxy_command("echo \"it's %h\"", values("a b")) == "echo \"it's \"'a b'\"\""


@pytest.mark.parametrize("template, token", [("ssh -W %h:%x bastion", "%x"), ("nc %H %p", "%H"),
                                             ("nc %C", "%C")])
def test_an_unknown_token_is_an_error_naming_it(template, token):
    with pytest.raises(InputError, match=f"unknown token {token}"):
        expand_proxy_command(template, GPU1, "gpu1")


def test_a_lone_percent_or_a_backslash_before_a_token_is_refused():
    with pytest.raises(InputError, match="lone '%'"):
        expand_proxy_command("nc %h 100%", GPU1)
    with pytest.raises(InputError, match=r"backslash before %h"):
        expand_proxy_command("nc \\%h", GPU1)
    assert expand_proxy_command("nc \\\\%h \\%% \\x", GPU1) == "nc \\\\gpu1.example \\% \\x"


@pytest.mark.parametrize("field, token", [("host", "%h"), ("user", "%r"), ("name", "%n")])
def test_a_value_starting_with_a_dash_is_refused_because_quoting_cannot_unmake_an_option(field, token):
    hostile = ProxyValues(**{**vars(GPU1), field: "-oProxyCommand=touch CANARY"})
    with pytest.raises(InputError, match=f"{token} would be '-oProxyCommand=touch CANARY'") as err:
        expand_proxy_command("ssh -l %r -W %h:%p jump # %n", hostile, "gpu1")
    assert str(err.value).startswith("gpu1: ")


def test_the_command_line_splits_back_to_sh_c_exec():
    line = proxy_command_line("ssh -W %h:%p bastion 2>/dev/null", GPU1)
    assert shlex.split(line) == ["/bin/sh", "-c", "exec ssh -W gpu1.example:2222 bastion 2>/dev/null"]
    for host in HOSTILE:
        expanded = expand_proxy_command("nc %h %p", values(host))
        assert shlex.split(proxy_command_line("nc %h %p", values(host))) == ["/bin/sh", "-c", "exec " + expanded]


@pytest.mark.parametrize("host", HOSTILE)
@pytest.mark.parametrize("template, shown", [
    ("printf %%s %h > OUT", "{}"),
    ("printf '%%s' '[%h]' > OUT", "[{}]"),
    ('printf "%%s" "[%h]" > OUT', "[{}]"),
    ("printf %%s %h 2>/dev/null >OUT", "{}"),
])
def test_a_hostile_value_arrives_verbatim_and_runs_nothing(tmp_path, host, template, shown):
    argv = shlex.split(proxy_command_line(template, values(host)))
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "CANARY").exists()
    assert (tmp_path / "OUT").read_text() == shown.format(host)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["OUT"]


def test_proxyjump_hops_are_read_in_order_and_checked():
    assert parse_jump_hops("admin@bastion:2222, second") == (Target("bastion", "admin", 2222), Target("second"))
    assert parse_jump_hops("[fd00::1]:2200") == (Target("fd00::1", None, 2200),)
    assert parse_jump_hops("none") == ()


@pytest.mark.parametrize("text, named", [
    ("bastion;touch CANARY", "bastion;touch CANARY"),
    ("ok,-oProxyCommand=touch", "-oProxyCommand=touch"),
    ("root@bastion:22222222", "root@bastion:22222222"),
    ("a,,b", "''"),
    ("ssh://bastion", "ssh://bastion"),
])
def test_a_bad_proxyjump_hop_is_an_input_error_naming_it(text, named):
    with pytest.raises(InputError) as err:
        parse_jump_hops(text, "gpu1")
    assert str(err.value).startswith("gpu1: ") and named in str(err.value)


def test_the_transport_runs_our_proxy_command_line_as_it_is():
    """Contract: the finished line is what runs; nothing expands %h/~ in it a second time (fabric 3.2,
    which the transport used before, did so in a string gateway)."""
    spec = ConnectionSpec(name="gpu1", host="x%h~y", user="root", proxy_command="cat # %h ~")
    line = _proxy_command_line(spec)
    assert line == proxy_command_line("cat # %h ~", values("x%h~y"))
    proxy = ProxyProcess(line)
    try:
        assert proxy.cmd == shlex.split(line) == ["/bin/sh", "-c", "exec cat # 'x%h~y' ~"]
    finally:
        proxy.close()
    assert proxy.process.returncode is not None  # closed means the command ended


def test_a_missing_proxy_program_is_one_unreachable_line_at_once():
    spec = ConnectionSpec(name="gpu1", host="gpu1", user="root", connect_timeout_s=8,
                          proxy_command="nonexistent-proxy-program -W %h:%p")
    started = time.monotonic()
    with pytest.raises(Unreachable) as err:
        SshTransport.open(spec)
    assert time.monotonic() - started < 5
    message = str(err.value)
    assert message.startswith("cannot connect to root@gpu1: its ProxyCommand ended (exit 127: ")
    assert "nonexistent-proxy-program" in message and "not found" in message and "\n" not in message

    (result,) = run_on_hosts([spec], lambda transport, spec: None)
    assert result.status == "unreachable" and result.msg == message


def test_a_proxy_command_with_an_unknown_token_fails_before_running_anything(tmp_path):
    spec = ConnectionSpec(name="gpu1", host="gpu1", proxy_command=f"touch {tmp_path}/ran; nc %h %z")
    with pytest.raises(InputError, match="unknown token %z"):
        SshTransport.open(spec)
    assert not (tmp_path / "ran").exists()


def test_a_bad_proxyjump_hop_is_refused_before_connecting():
    spec = ConnectionSpec(name="gpu1", host="gpu1", proxy_jump="bastion$(touch CANARY)")
    with pytest.raises(InputError, match=r"gpu1: ProxyJump hop 'bastion\$\(touch CANARY\)'"):
        SshTransport.open(spec)


def test_an_unreachable_bastion_is_one_line_naming_it():
    port = closed_port()
    spec = ConnectionSpec(name="gpu1", host="gpu1", user="root", connect_timeout_s=3,
                          proxy_jump=f"admin@127.0.0.1:{port}")
    with pytest.raises(Unreachable) as err:
        SshTransport.open(spec)
    message = str(err.value)
    assert message.startswith(f"cannot connect to bastion admin@127.0.0.1:{port}: ")
    assert "\n" not in message


def test_a_proxy_command_that_talks_a_lot_on_stderr_does_not_stall():
    line = proxy_command_line("sh -c 'head -c 300000 /dev/zero >&2; printf hello; sleep 5'", GPU1)
    proxy = ProxyProcess(line)
    try:
        proxy.settimeout(5)
        assert proxy.recv(5) == b"hello"  # a pipe nobody read would have filled at 64 KiB
    finally:
        proxy.close()
    assert proxy.ended() is None  # we stopped it: its exit says nothing about a failure
