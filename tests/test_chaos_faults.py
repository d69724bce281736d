"""The chaos and soak helpers that need no lab (tritonops/lab/faults.py, bench/soak.py's counting):
a seed gives the same faults, every kind comes in turn, a relay cut drops its connections but the
next one gets through, the inventory a bench writes keeps a deployment and ports of its own."""

from __future__ import annotations

import importlib.util
import socket
import threading
from pathlib import Path

import pytest

from tritonops.lab.faults import (KINDS, PHASES, Relay, deployment_inventory, plan_faults, relayed_known_hosts,
                                  tcp_connections_to)

REPO = Path(__file__).resolve().parents[1]


def test_the_same_seed_plans_the_same_faults_and_another_seed_others():
    hosts = ["b", "a", "c"]
    assert plan_faults(13, 12, hosts) == plan_faults(13, 12, list(reversed(hosts)))
    assert plan_faults(13, 12, hosts) != plan_faults(14, 12, hosts)


def test_every_kind_comes_in_turn_at_a_known_phase_on_a_known_host():
    faults = plan_faults(7, 2 * len(KINDS), ["h1", "h2"])
    assert sorted(f.kind for f in faults) == sorted(KINDS * 2)
    assert {f.kind for f in faults[:len(KINDS)]} == set(KINDS)
    assert all(f.phase in PHASES and f.host in ("h1", "h2") and 0 <= f.delay_s <= 6 for f in faults)
    assert [f.trial for f in faults] == list(range(2 * len(KINDS)))


def test_only_the_kinds_asked_for():
    assert {f.kind for f in plan_faults(1, 6, ["h"], ("ssh", "triton"))} == {"ssh", "triton"}


def _echo_server():
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=lambda c=conn: [c.sendall(d) for d in iter(lambda: c.recv(1024), b"")],
                             daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    return server


def test_a_cut_relay_drops_every_connection_and_the_next_one_gets_through():
    server = _echo_server()
    relay = Relay(server.getsockname())
    try:
        first = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
        first.sendall(b"ping")
        assert first.recv(16) == b"ping"
        assert tcp_connections_to({relay.port}) == 1
        assert relay.cut() == 1
        assert first.recv(16) == b""  # the session is gone, as a dropped network would leave it
        second = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
        second.sendall(b"again")
        assert second.recv(16) == b"again"
        second.close()
        first.close()
    finally:
        relay.close()
        server.close()


LAB = {"all": {"vars": {"ansible_user": "root", "ansible_ssh_common_args": "-o UserKnownHostsFile=/k"},
               "children": {"lab": {"children": {"lab_full": {
                   "hosts": {"a": {"ansible_host": "127.0.0.1", "ansible_port": 22200, "tritonops_model": "/m"},
                             "b": {"ansible_host": "127.0.0.1", "ansible_port": 22201}},
                   "vars": {"tritonops_build_host": "b", "tritonops_model": "/t"}}}}}}}


def test_a_bench_inventory_has_its_own_deployment_and_ports_and_goes_through_the_relays():
    class FakeRelay:
        port = 40000

    data = deployment_inventory(LAB, "soak", 19500, hosts=["a"], relays={"a": FakeRelay()}, known_hosts="/kk")
    host = data["all"]["hosts"]["a"]
    assert list(data["all"]["hosts"]) == ["a"]
    assert (host["tritonops_deployment"], host["tritonops_http_port"], host["tritonops_grpc_port"],
            host["tritonops_metrics_port"], host["ansible_port"], host["tritonops_model"]) == ("soak", 19500, 19501,
                                                                                               19502, 40000, "/m")
    assert data["all"]["vars"]["tritonops_build_host"] == "a"  # b is not in the inventory
    assert data["all"]["vars"]["tritonops_known_hosts_file"] == "/kk"
    assert "ansible_ssh_common_args" not in data["all"]["vars"]


def test_a_bench_inventory_refuses_a_deployment_that_is_not_a_name():
    with pytest.raises(Exception, match="deployment"):
        deployment_inventory(LAB, "../etc", 19500)


def test_known_hosts_name_each_relay_port_with_the_hosts_key():
    lines = ["[127.0.0.1]:22200 ssh-ed25519 AAAA1", "[127.0.0.1]:22201 ssh-ed25519 AAAA2", "other ssh-rsa X"]
    assert relayed_known_hosts(lines, {22201: 40001}) == lines + ["[127.0.0.1]:40001 ssh-ed25519 AAAA2"]


def _soak():
    spec = importlib.util.spec_from_file_location("bench_soak", REPO / "bench" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_soak_counts_what_exceeds_the_retention_and_orphaned_containers():
    soak = _soak()
    before = {"h": {"images": 3, "ssh_sessions": 1, "processes": 40, "root_kib": 100, "docker_kib": 1000}}
    after = {"h": {"images": 3, "ssh_sessions": 1, "processes": 40, "root_kib": 150, "docker_kib": 1200,
                   "releases": 9, "release_names": "r1 r2 r3 r4 r5 r6 r7 r8 r9", "partial": 1, "lock": 1,
                   "containers": 3, "container_names": "tritonops-soak tritonops-soak--r9-failed tritonops-soak--r0"}}
    left = soak.leftovers(before, after, 5)["h"]
    assert (left["releases_beyond_retention"], left["orphan_containers"], left["partial_releases"],
            left["lock_files"], left["root_growth_kib"]) == (2, 1, 1, 1, 50)
    figures = {"problems": [], "leftovers": {"h": left}, "controller_before": {"fds": 6, "threads": 1,
               "ssh_connections": 0}, "controller_after": {"fds": 6, "threads": 1, "ssh_connections": 1}}
    broken = soak.within_policy(figures)
    assert "h: releases_beyond_retention = 2" in broken and "h: orphan_containers = 1" in broken
    assert "controller: 1 SSH connection(s) to the hosts still open" in broken
    clean = dict(left, releases_beyond_retention=0, orphan_containers=0, partial_releases=0, lock_files=0)
    assert soak.within_policy(dict(figures, leftovers={"h": clean},
                                   controller_after=figures["controller_before"])) == []
