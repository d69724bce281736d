"""door/servers: each replica as a balancer's door sees it, read from `show stat` answers captured from
Debian's HAProxy 2.6.12 running tritonops' rendered door (tests/support/haproxy_door_capture.py; fixtures README)."""


from tests.support import paths
from tritonops.door.servers import DoorBackend, DoorServer, DoorStatus, door_status
from tritonops.door.runtime import parse_stat

FIXTURES = paths.FIXTURES / "haproxy"


def read(name: str, deployments=None) -> DoorStatus:
    return door_status(parse_stat((FIXTURES / name).read_text()), deployments)


def server(name, state, status, sessions=0, check="L7OK"):
    return DoorServer("chat", "http", name, "node-a", int(name[-1]), state, status, sessions, 0, check)


def test_each_replica_s_state_in_the_door_with_its_host_and_index_and_the_backend_s_queue():
    assert read("door_show_stat_busy.txt") == DoorStatus(
        (server("node-a-r0", "UP", "UP", 1), server("node-a-r1", "UP", "UP", 1)),
        (DoorBackend("chat", "http", "UP", 3, 1),))  # the third request waits in the backend, for either
    assert read("door_show_stat.txt") == DoorStatus(
        (server("node-a-r0", "UP", "UP 1/3"), server("node-a-r1", "DRAIN", "DRAIN 1/3")),
        (DoorBackend("chat", "http", "UP", 0, 0),))


def test_maint_and_down_read_as_such_and_the_summary_says_how_many_take_requests():
    maint = read("door_show_stat_maint.txt")
    assert [(s.server, s.state) for s in maint.servers] == [("node-a-r0", "MAINT"), ("node-a-r1", "MAINT")]
    assert maint.up("chat") == () and maint.backends[0].state == "DOWN"
    assert maint.summary() == "chat: 0/2 replicas UP (node-a-r0 MAINT, node-a-r1 MAINT)"
    down = read("door_show_stat_down.txt")
    assert [(s.server, s.status, s.check) for s in down.servers] == [("node-a-r0", "UP", "L7OK"),
                                                                      ("node-a-r1", "DOWN", "SOCKERR")]
    assert down.summary() == "chat: 1/2 replicas UP (node-a-r1 DOWN)"


def test_only_the_doors_proxies_and_the_deployments_asked_for():
    assert read("door_show_stat.txt", ["other"]) == DoorStatus((), ())
    assert read("show_stat_draining.txt") == DoorStatus((), ())  # a backend no door rendered ("replicas")
    assert read("door_show_stat.txt").summary() == "chat: 1/2 replicas UP (node-a-r1 DRAIN)"
    assert DoorStatus(()).summary() == "no door"


def test_a_door_s_proxy_names_read_back_to_their_deployment():
    from tritonops.render.door_config import door_of_proxy, grpc_backend, http_backend

    assert door_of_proxy(http_backend("chat_v2")) == ("chat_v2", "http", "backend")
    assert door_of_proxy(grpc_backend("chat")) == ("chat", "grpc", "backend")
    assert door_of_proxy("tritonops_chat_http_door") == ("chat", "http", "frontend")
    assert door_of_proxy("tritonops_metrics") is None and door_of_proxy("replicas") is None
