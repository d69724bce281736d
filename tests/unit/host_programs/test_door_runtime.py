"""The runtime program (host_programs/door_runtime.py) run as a host runs it, `python -c SOURCE`, against
a real haproxy: it drains and readies a server, waits for a drained server's in-flight request, and says
in one line when the socket is not there or HAProxy refuses a command."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from tests.support.haproxy_harness import BACKEND, SLOW_S, balancer  # noqa: F401 - the module's haproxy, a fixture
from tritonops.door import runtime_program
from tritonops.door.runtime import (RuntimeRefused, RuntimeUnreachable, find_server, parse_stat,
                                        server_status, set_server_state, show_stat)


def run(argv: tuple[str, ...]) -> subprocess.CompletedProcess:
    """The packed program with nothing of tritonops on the path, as on a host."""
    return subprocess.run((sys.executable, *argv[1:]), capture_output=True, text=True, timeout=30, cwd="/",
                          env={"PATH": os.environ.get("PATH", "")})


@pytest.fixture
def ready(balancer):
    """Both servers ready again after each test, whatever it left."""
    yield balancer
    for server in ("r0", "r1"):
        balancer.ask(f"set server {BACKEND}/{server} state ready")


def send(balancer, *commands: str) -> subprocess.CompletedProcess:
    return run(runtime_program.send_argv(commands, socket=balancer.socket))


def test_a_server_set_to_drain_reads_drain_then_ready_again(ready):
    done = send(ready, set_server_state(BACKEND, "r0", "drain"), show_stat())
    assert done.returncode == 0, done.stderr
    drain, stat = runtime_program.read_send(done.returncode, done.stdout, done.stderr)
    assert (drain.command, drain.text) == ("set server replicas/r0 state drain", "\n")
    assert server_status(parse_stat(stat.text)) == {"replicas/r0": "DRAIN", "replicas/r1": "UP"}
    assert ready.get("/") == 200  # the front door still answers, from r1

    done = send(ready, set_server_state(BACKEND, "r0", "ready"), show_stat())
    _, stat = runtime_program.read_send(done.returncode, done.stdout, done.stderr)
    assert server_status(parse_stat(stat.text))["replicas/r0"] == "UP"


def test_waiting_for_an_idle_server_returns_at_once(ready):
    started = time.monotonic()
    done = run(runtime_program.wait_drained_argv(BACKEND, "r1", 10, socket=ready.socket))
    waited = runtime_program.read_wait(done.returncode, done.stdout, done.stderr)
    assert (waited.drained, waited.polls, waited.scur, waited.qcur, waited.status) == (True, 1, 0, 0, "UP")
    assert time.monotonic() - started < 2


def test_waiting_for_a_drained_server_lasts_until_its_request_ends_or_the_deadline(ready):
    ready.ask(set_server_state(BACKEND, "r1", "drain"))  # so the slow request goes to r0
    request = ready.in_flight("/slow")
    ready.wait_for(lambda: ready.row("r0")["scur"] == "1", what="the slow request on r0")
    ready.ask(set_server_state(BACKEND, "r0", "drain"))
    ready.ask(set_server_state(BACKEND, "r1", "ready"))

    short = run(runtime_program.wait_drained_argv(BACKEND, "r0", 0.2, socket=ready.socket))
    waited = runtime_program.read_wait(short.returncode, short.stdout, short.stderr)
    assert (waited.drained, waited.status, waited.scur) == (False, "DRAIN", 1)
    assert 0.2 <= waited.waited_s < 0.5

    started = time.monotonic()
    done = run(runtime_program.wait_drained_argv(BACKEND, "r0", 10, socket=ready.socket))
    waited = runtime_program.read_wait(done.returncode, done.stdout, done.stderr)
    took = time.monotonic() - started
    assert (waited.drained, waited.status, waited.scur, waited.qcur) == (True, "DRAIN", 0, 0)
    assert waited.polls > 1 and 0.2 < waited.waited_s < SLOW_S + 0.5 and took < SLOW_S + 1.5
    request.join(5)
    assert not request.is_alive()
    assert find_server(parse_stat(ready.ask("show stat")), BACKEND, "r0").stot >= 1


def test_a_socket_that_is_not_there_or_refuses_says_so_in_one_line(tmp_path):
    missing = run(runtime_program.send_argv(["show stat"], socket=str(tmp_path / "nothing.sock")))
    assert missing.returncode == runtime_program.UNREACHABLE and missing.stdout == ""
    assert missing.stderr == f"{tmp_path}/nothing.sock: no such socket (is haproxy running, with this " \
                             "`stats socket`?)\n"
    with pytest.raises(RuntimeUnreachable, match="no such socket"):
        runtime_program.read_send(missing.returncode, missing.stdout, missing.stderr)

    stale = tmp_path / "stale.sock"  # what a stopped haproxy leaves: the file, nobody listening
    with socket.socket(socket.AF_UNIX) as left:
        left.bind(str(stale))
    refused = run(runtime_program.wait_drained_argv(BACKEND, "r0", 1, socket=str(stale)))
    assert refused.returncode == runtime_program.UNREACHABLE
    assert refused.stderr.count("\n") == 1 and "connection refused" in refused.stderr


def test_a_command_haproxy_refuses_fails_with_its_answer(ready):
    done = send(ready, "show stat", set_server_state("nope", "r0", "drain"), set_server_state(BACKEND, "r0", "drain"))
    assert done.returncode == runtime_program.REFUSED
    assert done.stderr == "haproxy refused `set server nope/r0 state drain`: No such backend.\n"
    answers = json.loads(done.stdout)["answers"]
    assert [answer["command"] for answer in answers] == ["show stat", "set server nope/r0 state drain"]
    with pytest.raises(RuntimeRefused) as refused:
        runtime_program.read_send(done.returncode, done.stdout, done.stderr)
    assert (refused.value.command, refused.value.answer) == ("set server nope/r0 state drain", "No such backend.")
    assert ready.status("r0") == "UP"  # the run stopped at the refusal: r0 was not drained

    unknown = run(runtime_program.wait_drained_argv(BACKEND, "r9", 5, socket=ready.socket))
    assert (unknown.returncode, unknown.stderr) == (runtime_program.REFUSED, "haproxy has no server replicas/r9\n")


def test_a_line_that_would_be_two_commands_is_not_sent(ready):
    argv = runtime_program.send_argv(["show stat"], socket=ready.socket)
    done = run((*argv[:-1], f"set server {BACKEND}/r0 state drain; show stat"))
    assert done.returncode == 1 and "';'" in done.stderr and done.stdout == ""
    assert ready.status("r0") == "UP"
