"""The host pool and transports without the lab: local runs, a closed port, host-key policies."""

import threading
import time

import paramiko
import pytest

from tests.support.network import closed_port
from tritonops.results import HostResult
from tritonops.transport.base import CommandTimeout, HostKeyRefused
from tritonops.transport.host_keys import AcceptNewHostKey, RefuseUnknownHostKey, known_hosts_name
from tritonops.transport.local import LocalTransport
from tritonops.transport.pool import run_on_hosts
from tritonops.transport.spec import ConnectionSpec


def local(name):
    return ConnectionSpec(name=name, host="localhost", local=True)


def echo_task(transport, spec):
    result = transport.run(f"echo {spec.name}")
    return HostResult(spec.name, "ok", result.stdout.strip())


def test_every_host_gets_a_result_in_the_given_order():
    group = run_on_hosts([local(f"h{i}") for i in range(5)], echo_task, forks=2)
    assert [r.host for r in group] == ["h0", "h1", "h2", "h3", "h4"]
    assert [r.msg for r in group] == ["h0", "h1", "h2", "h3", "h4"]
    assert group.all_ok


def test_a_failing_host_neither_stops_nor_hides_the_others():
    def task(transport, spec):
        if spec.name == "bad":
            raise RuntimeError("disk on fire")
        return echo_task(transport, spec)

    group = run_on_hosts([local("a"), local("bad"), local("c")], task, forks=3)
    assert [r.status for r in group] == ["ok", "failed", "ok"]
    assert group["bad"].msg == "RuntimeError: disk on fire"
    assert [r.host for r in group.failed] == ["bad"]


def test_forks_bounds_how_many_hosts_run_at_once():
    running, peak, lock = [0], [0], threading.Lock()

    def task(transport, spec):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return HostResult(spec.name, "ok")

    run_on_hosts([local(f"h{i}") for i in range(9)], task, forks=3)
    assert peak[0] == 3


def test_forks_below_one_is_refused():
    from tritonops.errors import TritonopsError

    with pytest.raises(TritonopsError, match="--forks"):
        run_on_hosts([local("a")], echo_task, forks=0)


def test_local_transport_passes_stdin_and_reports_exit_codes():
    transport = LocalTransport()
    assert transport.run("cat", stdin=b"hello").stdout == "hello"
    failed = transport.run("echo oops >&2; exit 3")
    assert (failed.exit_code, failed.tail()) == (3, "oops")


def test_local_command_timeout_is_an_error_not_a_hang():
    with pytest.raises(CommandTimeout):
        LocalTransport().run("sleep 5", timeout=0.2)


def test_closed_port_is_unreachable_with_the_reason():
    port = closed_port()
    spec = ConnectionSpec(name="ghost", host="127.0.0.1", port=port, user="root", connect_timeout_s=3)
    group = run_on_hosts([spec, local("alive")], echo_task)
    assert group["ghost"].status == "unreachable"
    assert f"cannot connect to root@127.0.0.1:{port}" in group["ghost"].msg
    assert group["alive"].status == "ok"


def test_known_hosts_name_uses_brackets_for_other_ports():
    assert known_hosts_name("gpu-01", 22) == "gpu-01"
    assert known_hosts_name("127.0.0.1", 22201) == "[127.0.0.1]:22201"


def test_unknown_key_is_refused_with_the_command_that_trusts_it(tmp_path):
    policy = RefuseUnknownHostKey(str(tmp_path / "known_hosts"), HostKeyRefused)
    host_key = paramiko.RSAKey.generate(1024)
    with pytest.raises(HostKeyRefused) as err:
        policy.missing_host_key(paramiko.SSHClient(), "[127.0.0.1]:22201", host_key)
    message = str(err.value)
    assert f"ssh-keyscan -p 22201 127.0.0.1 >> {tmp_path / 'known_hosts'}" in message
    assert "--accept-new-host-keys" in message


def test_accept_new_records_the_key_so_the_next_connection_knows_it(tmp_path):
    known = tmp_path / "ssh" / "known_hosts"
    client = paramiko.SSHClient()
    host_key = paramiko.RSAKey.generate(1024)
    AcceptNewHostKey(str(known)).missing_host_key(client, "[127.0.0.1]:22201", host_key)
    reloaded = paramiko.HostKeys(str(known))
    assert reloaded.lookup("[127.0.0.1]:22201")["ssh-rsa"] == host_key
