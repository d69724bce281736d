"""planning/balancer: a deployment's front door from the balancer's variables and the serving hosts' releases."""

from pathlib import Path

import pytest

from tests.support.serve_records import serve_record
from tritonops.errors import InputError
from tritonops.inventory import load_inventory
from tritonops.planning import door as balancer
from tritonops.render.door_config import BalancedReplica, BalancerConfig

INVENTORY = """all:
  children:
    gpu:
      hosts:
        node-a: {ansible_host: 10.0.0.11}
        node-b: {ansible_host: node-b.lab.example, tritonops_bind_address: 10.1.0.12}
        node-c: {ansible_host: 10.0.0.13, tritonops_replica_address: 192.168.7.13, tritonops_bind_address: 0.0.0.0}
    tritonops_balancers:
      hosts:
        door-1:
          ansible_host: 10.0.0.2
%s
"""


def hosts(tmp_path: Path, door_vars: str = "") -> dict:
    (tmp_path / "hosts.yml").write_text(INVENTORY % door_vars)
    return {h.name: h for h in load_inventory([str(tmp_path / "hosts.yml")]).select(None)}


def test_a_balancer_is_a_host_of_the_balancers_group_and_its_door_defaults_to_triton_s_ports(tmp_path):
    found = hosts(tmp_path)
    assert [name for name, h in found.items() if balancer.is_balancer(h)] == ["door-1"]
    assert balancer.door(found["door-1"]) == balancer.Door(8000, 8001, 2000, 256, 900, None, None)


def test_the_door_reads_the_circuit_breaker_keys_and_tls_from_the_balancers_variables(tmp_path):
    door = balancer.door(hosts(tmp_path, """          tritonops_door_http_port: 443
          tritonops_door_grpc_port: "off"
          tritonops_queue_timeout_ms: 500
          tritonops_max_queue: 0
          tritonops_longest_generation_s: 3600
          tritonops_api_keys_file: /etc/tritonops/keys
          tritonops_tls_pem: /etc/tritonops/door.pem""")["door-1"])
    assert door == balancer.Door(443, None, 500, 0, 3600, "/etc/tritonops/keys", "/etc/tritonops/door.pem")


def test_routing_by_prefix_is_read_from_the_balancers_variables_and_reaches_the_doors_config(tmp_path):
    door = balancer.door(hosts(tmp_path, """          tritonops_door_routing: Prefix
          tritonops_door_prefix_bytes: 512
          tritonops_door_balance_factor: 0""")["door-1"])
    assert (door.routing, door.prefix_bytes, door.balance_factor) == ("prefix", 512, 0)
    config = balancer.balancer_config("chat", door, [balancer.ServedHost("node-a", "10.0.0.11", ((0, 8000, 8001),), 8)])
    assert (config.routing, config.prefix_bytes, config.balance_factor) == ("prefix", 512, 0)
    default = balancer.door(hosts(tmp_path)["door-1"])
    assert (default.routing, default.prefix_bytes, default.balance_factor) == ("leastconn", 1024, 150)


@pytest.mark.parametrize("line, named", [
    ("tritonops_door_http_port: 70000", "tritonops_door_http_port"),
    ("tritonops_door_grpc_port: 8000", "tritonops_door_grpc_port 8000 is the same port"),
    ("tritonops_queue_timeout_ms: soon", "tritonops_queue_timeout_ms"),
    ("tritonops_max_queue: -1", "tritonops_max_queue"),
    ("tritonops_api_keys_file: keys.txt", "tritonops_api_keys_file 'keys.txt' is not an absolute path"),
    ("tritonops_tls_pem: \"/etc/my door.pem\"", "tritonops_tls_pem"),
    ("tritonops_door_routing: fastest", "tritonops_door_routing 'fastest' is not leastconn or prefix"),
    ("tritonops_door_balance_factor: 50", "tritonops_door_balance_factor 50 is neither 0"),
    ("tritonops_door_prefix_bytes: 20000", "tritonops_door_prefix_bytes"),
])
def test_a_bad_door_variable_is_refused_naming_it_and_its_line(tmp_path, line, named):
    with pytest.raises(InputError) as caught:
        balancer.door(hosts(tmp_path, "          " + line)["door-1"])
    assert named in str(caught.value) and "hosts.yml:" in str(caught.value)


def test_replicas_are_reached_at_the_replica_address_else_a_specific_bind_address_else_ansible_host(tmp_path):
    found = hosts(tmp_path)
    assert [balancer.replica_address(found[n]) for n in ("node-a", "node-b", "node-c")] == [
        "10.0.0.11", "10.1.0.12", "192.168.7.13"]


def test_the_config_lists_every_replica_of_every_host_from_its_release_with_max_num_seqs_as_maxconn(tmp_path):
    found = hosts(tmp_path, "          tritonops_queue_timeout_ms: 750")
    release_a = serve_record(replicas=[{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]},
                                       {"index": 1, "gpus": [1], "ports": [8010, 8011, 8012]}])
    release_b = serve_record(replicas=[{"index": 0, "gpus": [0, 1], "ports": [9000, 9001, 9002]}])
    served = [balancer.served_host(found["node-a"], release_a, 256), balancer.served_host(found["node-b"], release_b, 64)]
    config = balancer.balancer_config("chat", balancer.door(found["door-1"]), served)
    assert config == BalancerConfig(
        deployment="chat", http_port=8000, grpc_port=8001, queue_timeout_ms=750, max_queue=256, server_timeout_s=900,
        replicas=(BalancedReplica("node-a-r0", "10.0.0.11", 8000, 8001, 256),
                  BalancedReplica("node-a-r1", "10.0.0.11", 8010, 8011, 256),
                  BalancedReplica("node-b-r0", "10.1.0.12", 9000, 9001, 64)))


def test_a_deployment_with_no_current_release_anywhere_has_no_door_to_plan():
    with pytest.raises(InputError, match="deployment chat: no serving host has a current release"):
        balancer.balancer_config("chat", balancer.Door(), [])


def test_a_host_name_haproxy_could_not_address_is_refused():
    with pytest.raises(InputError):
        balancer.server_name("node a", 0)
    assert balancer.server_name("gpu-07.rack2", 3) == "gpu-07.rack2-r3"


def test_a_runs_inputs_keep_the_balancers_apart_from_the_hosts_that_serve(tmp_path):
    from tests.support.playbooks import write_playbook
    from tritonops.playbook import load_run_inputs

    hosts(tmp_path)
    playbook = write_playbook(tmp_path, "- name: t\n  put_file: {path: /tmp/x, content: y}\n")
    inputs = load_run_inputs(playbook, [str(tmp_path / "hosts.yml")])
    assert inputs.names == ("node-a", "node-b", "node-c")
    assert [host.name for host in inputs.balancers] == ["door-1"]
    limited = load_run_inputs(playbook, [str(tmp_path / "hosts.yml")], limit="node-b:door-1")
    assert limited.names == ("node-b",) and [host.name for host in limited.balancers] == ["door-1"]


def test_a_limited_run_still_reaches_every_balancer_and_renders_doors_from_every_serving_host(tmp_path):
    # issue #41: --limit node-b selects neither door-1 nor the other serving hosts; the run drains on door-1 all
    # the same, and the door is rendered from every host of the deployment (node-c serves another one)
    from tests.support.playbooks import write_playbook
    from tritonops.playbook import load_run_inputs

    (tmp_path / "hosts.yml").write_text(INVENTORY % "" + "    other:\n      hosts:\n"
                                        "        node-d: {ansible_host: 10.0.0.14, tritonops_deployment: chat}\n")
    playbook = write_playbook(tmp_path, "- name: t\n  put_file: {path: /tmp/x, content: y}\n")
    limited = load_run_inputs(playbook, [str(tmp_path / "hosts.yml")], limit="node-b")
    assert limited.names == ("node-b",) and limited.balancers == ()
    assert [host.name for host in limited.doors] == ["door-1"]
    assert [host.name for host in limited.fleet({"default"})] == ["node-a", "node-b", "node-c"]
    assert [host.name for host in limited.fleet({"chat"})] == ["node-d"]
    assert [host.name for host in limited.fleet()] == ["node-a", "node-b", "node-c", "node-d"]


@pytest.mark.parametrize("door_vars, bound", [
    ("", "10.0.0.2"),                                              # a private ansible_host
    ("          tritonops_bind_address: 192.168.9.2", "192.168.9.2"),  # the balancer's own bind address wins
    ("          tritonops_bind_address: '::'", "::"),              # every address only when asked
])
def test_haproxy_s_exporter_binds_to_the_balancer_s_private_address(tmp_path, door_vars, bound):
    door = hosts(tmp_path, door_vars)["door-1"]
    assert balancer.exporter_bind(door) == bound
    assert balancer.balancer_globals(door).metrics_address == bound


@pytest.mark.parametrize("connection, said", [
    ("34.120.5.8", "ansible_host 34.120.5.8 is not a private or loopback IP address"),
    ("door-1.example.com", "ansible_host door-1.example.com is not a private or loopback IP address"),
])
def test_a_balancer_with_no_private_address_is_told_which_variable_to_set(tmp_path, connection, said):
    text = INVENTORY.replace("ansible_host: 10.0.0.2", f"ansible_host: {connection}") % ""
    (tmp_path / "hosts.yml").write_text(text)
    door = load_inventory([str(tmp_path / "hosts.yml")]).host("door-1")
    with pytest.raises(InputError) as caught:
        balancer.exporter_bind(door)
    # where ansible_host was set, then what to set
    assert f"hosts.yml:11: door-1: no private address to bind HAProxy's exporter to ({said}): set " \
           "tritonops_bind_address (the balancer's private IP" in str(caught.value)


def test_a_bind_address_that_is_no_ip_address_is_refused_naming_its_line(tmp_path):
    with pytest.raises(InputError, match="tritonops_bind_address 'door.lan' is not an IP address") as caught:
        balancer.exporter_bind(hosts(tmp_path, "          tritonops_bind_address: door.lan")["door-1"])
    assert "hosts.yml:" in str(caught.value)
