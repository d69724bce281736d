"""HAProxy's runtime API as data: the command lines by equality, the parsers on answers captured from
the real HAProxy 2.6 (tests/fixtures/haproxy/, README there), and a live haproxy that still answers
the way those files say."""


import pytest

from tests.support.haproxy_harness import BACKEND, balancer  # noqa: F401 - the module's haproxy, a fixture
from tests.support.paths import FIXTURES
from tritonops.door import runtime_program
from tritonops.door.runtime import (RuntimeApiError, RuntimeRefused, ServerState, StatRow, check_answer,
                                        drained, find_server, parse_servers_state, parse_stat, server_status,
                                        set_server_address, set_server_check_port, set_server_state,
                                        set_server_weight, show_servers_state, show_stat, shutdown_sessions)
from tritonops.errors import InputError

CAPTURED = FIXTURES / "haproxy"


def captured(name: str) -> str:
    return (CAPTURED / name).read_text()


def test_the_command_lines():
    assert set_server_state("replicas", "r0", "drain") == "set server replicas/r0 state drain"
    assert set_server_state("chat.v2", "tritonops-chat-1", "ready") == "set server chat.v2/tritonops-chat-1 state ready"
    assert set_server_state("replicas", "r0", "maint") == "set server replicas/r0 state maint"
    assert set_server_weight("replicas", "r1", 0) == "set server replicas/r1 weight 0"
    assert set_server_weight("replicas", "r1", 256) == "set server replicas/r1 weight 256"
    assert shutdown_sessions("replicas", "r0") == "shutdown sessions server replicas/r0"
    assert show_stat() == "show stat"
    assert show_stat("replicas") == "show stat replicas -1 -1"
    assert show_servers_state() == "show servers state"
    assert show_servers_state("replicas") == "show servers state replicas"
    assert set_server_address("replicas", "r0", "10.0.0.7", 8010) == "set server replicas/r0 addr 10.0.0.7 port 8010"
    assert set_server_address("replicas", "r0", "fd00::7", 8010) == "set server replicas/r0 addr fd00::7 port 8010"
    assert set_server_check_port("replicas", "r0", 8010) == "set server replicas/r0 check-port 8010"


@pytest.mark.parametrize("build", [
    lambda: set_server_state("replicas; shutdown frontend front", "r0", "drain"),
    lambda: set_server_state("replicas", "r0\nshow stat", "drain"),
    lambda: set_server_state("replicas", "", "drain"),
    lambda: set_server_state("replicas", "r 0", "ready"),
    lambda: set_server_state("replicas", "r0", "up"),
    lambda: set_server_state("replicas", "r0", "DRAIN"),
    lambda: set_server_weight("replicas", "r0", 257),
    lambda: set_server_weight("replicas", "r0", -1),
    lambda: set_server_weight("replicas", "r0", "10"),
    lambda: set_server_weight("replicas", "r0", 1.5),
    lambda: set_server_weight("replicas", "r0", True),
    lambda: shutdown_sessions("replicas/r1", "r0"),
    lambda: set_server_address("replicas", "r0", "node-1", 8010),
    lambda: set_server_address("replicas", "r0", "10.0.0.7 port 1; shutdown", 8010),
    lambda: set_server_address("replicas", "r0", "10.0.0.7", 70000),
    lambda: set_server_check_port("replicas", "r0", 0),
    lambda: set_server_check_port("replicas", "r0", "8010"),
    lambda: show_stat("back\\end"),
    lambda: show_servers_state("r\u00e9plicas"),
])
def test_a_name_state_or_weight_haproxy_would_read_otherwise_is_refused(build):
    with pytest.raises(InputError) as refused:
        build()
    assert "\n" not in str(refused.value)


def test_show_stat_reads_every_row_with_its_counters():
    rows = parse_stat(captured("show_stat_up.txt"))
    assert [(row.backend, row.server, row.kind) for row in rows] == [
        ("front", "FRONTEND", "frontend"), ("replicas", "r0", "server"), ("replicas", "r1", "server"),
        ("replicas", "BACKEND", "backend")]
    front, r0, r1, backend = rows
    assert front.status == "OPEN" and front.slim == 9984 and front.stot == 4 and front.hrsp_5xx == 1
    assert front.weight is None and front.address is None and front.check_status is None
    assert r1 == StatRow(backend="replicas", server="r1", kind="server", status="UP", scur=0, qcur=0, stot=2,
                         hrsp_5xx=1, check_status="L4OK", check_desc="Layer4 check passed", weight=1, uweight=1,
                         slim=None, qlimit=None, address=r1.address, lastchg=r1.lastchg, req_tot=2, hrsp_2xx=1,
                         qtime=0, qtime_max=0, qmax=0)
    assert (front.req_tot, front.req_rate, front.hrsp_2xx, front.intercepted, front.qtime) == (4, 4, 3, 0, None)
    assert r1.address.startswith("127.0.0.1:") and isinstance(r1.lastchg, int)
    assert (r0.hrsp_5xx, r0.stot, r0.state) == (0, 2, "UP")
    assert (backend.status, backend.slim, backend.weight, backend.stot) == ("UP", 999, 2, 4)


def test_show_stat_says_which_server_is_draining_with_a_request_in_flight():
    rows = parse_stat(captured("show_stat_draining.txt"))
    assert server_status(rows) == {"replicas/r0": "DRAIN", "replicas/r1": "MAINT"}
    assert find_server(rows, "replicas", "r0").scur == 1
    assert not drained(rows, "replicas", "r0")
    assert drained(rows, "replicas", "r1")
    # with its only other server in maint and r0 draining, the backend itself reads DOWN
    assert [row.status for row in rows if row.kind == "backend"] == ["DOWN"]


def test_show_stat_states_while_checks_start_and_when_a_server_is_down():
    starting = server_status(parse_stat(captured("show_stat_starting.txt")))
    assert starting == {"replicas/r0": "UP", "replicas/r1": "UP 1/3"}
    r1 = find_server(parse_stat(captured("show_stat_starting.txt")), "replicas", "r1")
    assert (r1.state, r1.check_status) == ("UP", "INI")
    down = find_server(parse_stat(captured("show_stat_down.txt")), "replicas", "r1")
    assert (down.status, down.check_status) == ("DOWN", "L4CON")
    assert drained(parse_stat(captured("show_stat_down.txt")), "replicas", "r0")


def test_show_stat_of_one_backend_has_no_frontend():
    rows = parse_stat(captured("show_stat_backend.txt"))
    assert [(row.server, row.kind) for row in rows] == [("r0", "server"), ("r1", "server"), ("BACKEND", "backend")]


def test_a_server_haproxy_does_not_have_is_an_error_not_drained():
    rows = parse_stat(captured("show_stat_up.txt"))
    with pytest.raises(RuntimeApiError, match="haproxy has no server replicas/r9"):
        drained(rows, "replicas", "r9")
    with pytest.raises(RuntimeApiError, match="no server front/FRONTEND"):
        find_server(rows, "front", "FRONTEND")  # a frontend's row is not a server


def test_show_servers_state_decodes_admin_and_operational_states():
    r0, r1 = parse_servers_state(captured("show_servers_state_up.txt"))
    assert r0 == ServerState(backend_id=3, backend="replicas", server_id=1, server="r0", address="127.0.0.1",
                             port=r0.port, operational="running", admin="ready", admin_flags=(), uweight=1,
                             iweight=1, since_change_s=0, check_result="passed", fqdn=None)
    assert isinstance(r0.port, int) and r0.port != r1.port
    r0, r1 = parse_servers_state(captured("show_servers_state_draining.txt"))
    assert (r0.admin, r0.admin_flags, r0.operational) == ("drain", ("drain (forced)",), "running")
    assert (r1.admin, r1.admin_flags, r1.operational) == ("maint", ("maint (forced)",), "stopped")
    r0, r1 = parse_servers_state(captured("show_servers_state_down.txt"))
    assert (r1.admin, r1.operational, r1.check_result) == ("ready", "stopped", "failed")


@pytest.mark.parametrize("name, command, message", [
    ("refused_no_such_backend.txt", "set server nope/r0 state drain", "No such backend."),
    ("refused_no_such_server.txt", "set server replicas/nope state drain", "No such server."),
    ("refused_weight.txt", "set server replicas/r0 weight 300",
     "Absolute weight can only be between 0 and 256 inclusive."),
    ("refused_unknown_command.txt", "frobnicate",
     "Unknown command, but maybe one of the following ones is a better match:"),
    ("refused_show_stat.txt", "show stat nope -1 -1", "No such proxy."),
    ("refused_show_servers_state.txt", "show servers state nope", "Can't find backend."),
])
def test_an_error_answer_is_a_one_line_refusal(name, command, message):
    with pytest.raises(RuntimeRefused) as refused:
        check_answer(command, captured(name))
    assert str(refused.value) == f"haproxy refused `{command}`: {message}"
    assert refused.value.answer == message and "\n" not in str(refused.value)


def test_the_parsers_refuse_an_error_answer():
    with pytest.raises(RuntimeRefused, match="No such proxy"):
        parse_stat(captured("refused_show_stat.txt"))
    with pytest.raises(RuntimeRefused, match="Can't find backend"):
        parse_servers_state(captured("refused_show_servers_state.txt"))
    with pytest.raises(RuntimeRefused, match="an empty answer"):
        parse_stat("\n")
    with pytest.raises(RuntimeApiError, match="format 2"):
        parse_servers_state("2\n# be_id be_name\n")


def test_a_command_that_works_answers_nothing():
    assert check_answer("set server replicas/r0 state drain", captured("set_server_state_drain.txt")) == "\n"
    assert check_answer("set server replicas/r0 check-port 8010", captured("set_server_check_port.txt")) == "\n"


def test_a_server_sent_to_another_port_answers_what_changed_and_a_missing_one_is_refused():
    moved = "set server replicas/r0 addr 127.0.0.1 port 8010"
    assert check_answer(moved, captured("set_server_addr_port_changed.txt")).startswith("no need to change the addr, ")
    assert check_answer(moved, captured("set_server_addr_unchanged.txt"))  # asked twice: nothing to change, no error
    with pytest.raises(RuntimeRefused, match="No such server"):
        check_answer("set server replicas/nope addr 127.0.0.1 port 1", captured("refused_set_server_addr.txt"))
    assert check_answer("show stat", captured("show_stat_up.txt")).startswith("# pxname,")


def test_the_runtime_program_argument_lists():
    program = runtime_program.PROGRAM
    assert runtime_program.send_argv([set_server_state("replicas", "r0", "drain"), show_stat()]) == (
        "python3", "-c", program, "/run/haproxy/tritonops-admin.sock", "send",
        "set server replicas/r0 state drain", "show stat")
    assert runtime_program.wait_drained_argv("replicas", "r0", 30, socket="/tmp/a.sock", python="/usr/bin/python3") \
        == ("/usr/bin/python3", "-c", program, "/tmp/a.sock", "wait-drained", "replicas", "r0", "30")
    assert runtime_program.wait_drained_argv("replicas", "r0", 2.5)[-1] == "2.5"
    for bad in (lambda: runtime_program.send_argv([]), lambda: runtime_program.send_argv("show stat"),
                lambda: runtime_program.send_argv(["show stat; shutdown frontend front"]),
                lambda: runtime_program.send_argv(["show stat\n"]),
                lambda: runtime_program.send_argv(["show stat"], socket="relative.sock"),
                lambda: runtime_program.wait_drained_argv("replicas", "r0", -1),
                lambda: runtime_program.wait_drained_argv("replicas", "r0", 86401),
                lambda: runtime_program.wait_drained_argv("replicas", "r0/x", 5)):
        with pytest.raises(InputError):
            bad()


def test_reading_the_runtime_program_answers():
    sent = runtime_program.read_send(0, '{"answers": [{"command": "show stat", "answer": "# pxname,svname\\n"}]}', "")
    assert sent == (runtime_program.Answer("show stat", "# pxname,svname\n"),)
    waited = runtime_program.read_wait(0, '{"drained": false, "waited_s": 0.2, "polls": 3, "status": "DRAIN", '
                                          '"scur": 1, "qcur": 0}', "")
    assert waited == runtime_program.DrainWait(False, 0.2, 3, "DRAIN", 1, 0)
    with pytest.raises(runtime_program.RuntimeUnreachable,
                       match="haproxy runtime API: /x.sock: no such socket"):
        runtime_program.read_send(69, "", "/x.sock: no such socket (is haproxy running, with this `stats socket`?)\n")
    with pytest.raises(RuntimeRefused, match=r"^haproxy refused `set server nope/r0 state drain`: No such backend\.$"):
        runtime_program.read_send(65, '{"answers": [{"command": "set server nope/r0 state drain", '
                                      '"answer": "No such backend.\\n\\n"}]}', "haproxy refused ...\n")
    with pytest.raises(RuntimeApiError, match="haproxy has no server replicas/r9"):
        runtime_program.read_wait(65, "", "haproxy has no server replicas/r9\n")
    with pytest.raises(RuntimeApiError, match="no JSON object"):
        runtime_program.read_wait(0, "Traceback", "")


# --- the captured answers are still what a live HAProxy answers ------------------------------------

@pytest.mark.parametrize("name, command", [
    ("refused_no_such_backend.txt", "set server nope/r0 state drain"),
    ("refused_no_such_server.txt", f"set server {BACKEND}/nope state drain"),
    ("refused_weight.txt", f"set server {BACKEND}/r0 weight 300"),
    ("refused_unknown_command.txt", "frobnicate"),
    ("refused_show_stat.txt", "show stat nope -1 -1"),
    ("refused_show_servers_state.txt", "show servers state nope"),
])
def test_a_live_haproxy_refuses_as_captured(balancer, name, command):
    assert balancer.ask(command) == captured(name)


def test_a_live_haproxy_answers_in_the_captured_formats(balancer):
    live = balancer.ask("show stat")
    assert live.splitlines()[0] == captured("show_stat_up.txt").splitlines()[0]
    assert server_status(parse_stat(live)) == {"replicas/r0": "UP", "replicas/r1": "UP"}
    state = balancer.ask("show servers state")
    assert state.splitlines()[:2] == captured("show_servers_state_up.txt").splitlines()[:2]
    assert [(s.server, s.admin, s.operational) for s in parse_servers_state(state)] == [
        ("r0", "ready", "running"), ("r1", "ready", "running")]
    # a filter on a backend that does not exist, named by a digit, is read as a proxy id: rows go by name
    other = parse_stat(balancer.ask("show stat 3 -1 -1"))
    assert other and all(row.backend != "3" for row in other)
