"""What a door becomes against the file a balancer has now (planning.door_change, issue #41): read back from
tritonops' own rendering, compared server by server, each host's count said, an unreadable host's servers kept."""

from tritonops.modes.kserve import KSERVE
from tritonops.planning.door import Door, ServedHost, balancer_config
from tritonops.planning.door_change import DoorServer, door_change, door_servers, file_diff, kept_host
from tritonops.render.door_config import render_deployment

S1 = ServedHost("s1", "10.0.0.1", ((0, 8000, 8001), (1, 8010, 8011), (2, 8020, 8021), (3, 8030, 8031)), 64)
S2 = ServedHost("s2", "10.0.0.2", ((0, 8000, 8001),), 32)


def rendered(*hosts: ServedHost, door: Door = Door()) -> str:
    return render_deployment(balancer_config("dep", door, hosts))


def test_the_servers_of_a_rendered_door_are_read_back_with_their_ports_and_maxconn():
    servers = door_servers(rendered(S1, S2), "dep")
    assert list(servers) == ["s1-r0", "s1-r1", "s1-r2", "s1-r3", "s2-r0"]
    assert servers["s1-r2"] == DoorServer("s1-r2", "s1", 2, "10.0.0.1", 8020, 8021, 64)
    assert servers["s2-r0"] == DoorServer("s2-r0", "s2", 0, "10.0.0.2", 8000, 8001, 32)


def test_without_a_grpc_door_the_servers_have_no_grpc_port_and_another_deployment_s_file_has_none_of_them():
    text = rendered(S2, door=Door(grpc_port=None))
    assert door_servers(text, "dep")["s2-r0"].grpc_port is None
    assert door_servers(text, "other") == {}
    assert door_servers(None, "dep") == door_servers("", "dep") == {}


def test_a_host_serving_fewer_replicas_is_said_with_its_counts_and_the_others_are_not_mentioned():
    before = door_servers(rendered(S1, S2), "dep")
    fewer = ServedHost("s1", "10.0.0.1", S1.replicas[:2], 64)
    change = door_change(before, balancer_config("dep", Door(), (fewer, S2)))
    assert change.removed == ("s1-r2", "s1-r3") and change.added == () and change.readdressed == ()
    assert change.lines() == ["s1: 4 → 2 replicas"]


def test_the_same_hosts_change_nothing_and_a_moved_port_is_a_readdressed_server():
    before = door_servers(rendered(S1, S2), "dep")
    assert not door_change(before, balancer_config("dep", Door(), (S1, S2))).changed
    moved = ServedHost("s2", "10.0.0.2", ((0, 9000, 9001),), 32)
    change = door_change(before, balancer_config("dep", Door(), (S1, moved)))
    assert change.readdressed == (("s2-r0", "10.0.0.2:8000, gRPC :8001", "10.0.0.2:9000, gRPC :9001"),)
    assert change.lines() == ["s2-r0 moves 10.0.0.2:8000, gRPC :8001 → 10.0.0.2:9000, gRPC :9001"]


def test_a_first_door_adds_every_server_and_says_each_host():
    change = door_change({}, balancer_config("dep", Door(), (S1, S2)))
    assert len(change.added) == 5 and change.lines() == ["s1: 0 → 4 replicas", "s2: 0 → 1 replica"]


def test_a_host_that_could_not_be_read_keeps_the_servers_the_door_has_for_it():
    before = door_servers(rendered(S1, S2), "dep")
    kept = kept_host(before, "s1", KSERVE, grpc=True)
    assert kept == S1
    assert door_change(before, balancer_config("dep", Door(), (kept, S2))).changed is False
    assert kept_host(before, "s9", KSERVE, grpc=True) is None  # the door has none of it: nothing to keep


def test_an_unreadable_host_whose_grpc_ports_the_file_lacks_cannot_be_kept_for_a_door_with_grpc():
    before = door_servers(rendered(S2, door=Door(grpc_port=None)), "dep")
    assert kept_host(before, "s2", KSERVE, grpc=True) is None
    assert kept_host(before, "s2", KSERVE, grpc=False) is not None


def test_the_file_diff_shows_the_lines_that_go_and_is_empty_when_nothing_changes():
    old, new = rendered(S1, S2), rendered(ServedHost("s1", "10.0.0.1", S1.replicas[:2], 64), S2)
    diff = file_diff("10-dep.cfg", old, new)
    assert "--- before: 10-dep.cfg" in diff and "+++ after: 10-dep.cfg" in diff
    assert "-    server s1-r3 10.0.0.1:8030 maxconn 64" in diff.splitlines()
    assert not any(line.startswith("+    server") for line in diff.splitlines())
    assert file_diff("10-dep.cfg", old, old) == ""
