"""planning/bind: where a serving host's replicas bind their ports, with and without balancers in the inventory."""

from pathlib import Path

import pytest

from tritonops.errors import InputError
from tritonops.inventory import load_inventory
from tritonops.planning.bind import local_address, replica_bind

INVENTORY = """all:
  hosts:
    private: {ansible_host: 10.0.0.11}
    loopback: {ansible_host: 127.0.0.1, ansible_port: 2222}
    reached: {ansible_host: 203.0.113.7, tritonops_replica_address: 192.168.7.13}
    chosen: {ansible_host: 10.0.0.14, tritonops_replica_address: 192.168.7.14, tritonops_bind_address: 10.9.0.14}
    public: {ansible_host: 0.0.0.0, tritonops_bind_address: 0.0.0.0}
    v6: {ansible_host: "fd00::15"}
    exposed: {ansible_host: 34.120.5.8}
    named: {ansible_host: gpu-9.example.com}
    named_reach: {ansible_host: 10.0.0.16, tritonops_replica_address: gpu-16.internal}
    bad: {ansible_host: 10.0.0.17, tritonops_bind_address: eth0}
"""


@pytest.fixture
def hosts(tmp_path: Path) -> dict:
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    return {h.name: h for h in load_inventory([str(tmp_path / "hosts.yml")]).select(None)}


def test_without_balancers_every_replica_binds_to_every_address_as_before(hosts):
    assert {name: replica_bind(host, False) for name, host in hosts.items() if name not in ("chosen", "bad")} == {
        "private": "0.0.0.0", "loopback": "0.0.0.0", "reached": "0.0.0.0", "public": "0.0.0.0", "v6": "0.0.0.0",
        "exposed": "0.0.0.0", "named": "0.0.0.0", "named_reach": "0.0.0.0"}
    assert replica_bind(hosts["chosen"], False) == "10.9.0.14"  # a bind the user set is kept either way


def test_behind_a_balancer_replicas_bind_where_the_balancer_reaches_them_else_a_private_ansible_host(hosts):
    assert {name: replica_bind(hosts[name], True) for name in ("private", "loopback", "reached", "v6")} == {
        "private": "10.0.0.11", "loopback": "127.0.0.1", "reached": "192.168.7.13", "v6": "fd00::15"}


def test_the_user_s_bind_address_wins_behind_a_balancer_even_0_0_0_0(hosts):
    assert replica_bind(hosts["chosen"], True) == "10.9.0.14"
    assert replica_bind(hosts["public"], True) == "0.0.0.0"


@pytest.mark.parametrize("name, said", [
    ("exposed", "exposed: no private address to bind its replicas to behind the balancer (ansible_host 34.120.5.8 "
                "is not a private or loopback IP address): set tritonops_replica_address (the private IP the "
                "balancers reach it at) or tritonops_bind_address (0.0.0.0 to stay public)"),
    ("named", "named: no private address to bind its replicas to behind the balancer (ansible_host "
              "gpu-9.example.com is not a private or loopback IP address)"),
    ("named_reach", "named_reach: tritonops_replica_address 'gpu-16.internal' is a name, not an IP address its "
                    "replicas can bind to behind the balancer: set tritonops_bind_address to the host's private IP"),
])
def test_a_host_with_no_private_address_behind_a_balancer_is_refused_naming_it_and_the_variable_to_set(hosts, name,
                                                                                                       said):
    with pytest.raises(InputError) as refused:
        replica_bind(hosts[name], True)
    assert said in str(refused.value) and "hosts.yml:" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_bind_address_that_is_not_an_ip_address_is_refused_with_its_file_and_line(hosts):
    for behind in (False, True):
        with pytest.raises(InputError) as refused:
            replica_bind(hosts["bad"], behind)
        assert "tritonops_bind_address 'eth0' is not an IP address" in str(refused.value)
        assert "hosts.yml:12" in str(refused.value)


def test_replicas_are_called_on_the_host_at_loopback_for_a_wildcard_else_at_their_address():
    assert [local_address(a) for a in ("0.0.0.0", "", "::", "10.0.0.11", "fd00::15")] == [
        "127.0.0.1", "127.0.0.1", "127.0.0.1", "10.0.0.11", "fd00::15"]
