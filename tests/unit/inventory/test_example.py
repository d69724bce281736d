"""The example inventory shipped for users stays valid and means what its comments say."""

import os

from tests.support.paths import REPO
from tritonops.inventory import load_inventory

EXAMPLE = REPO / "inventory" / "example"


def test_example_inventory_loads_cleanly():
    inventory = load_inventory([str(EXAMPLE)], ssh_config_file=os.devnull)
    assert [host.name for host in inventory.hosts] == [
        "bastion", "node01", "node02", "node03", "node04", "a100-a", "a100-b", "builder"]
    assert inventory.warnings == ()
    assert [host.name for host in inventory.select("gpu:!node04")] == [
        "node01", "node02", "node03", "a100-a", "a100-b"]


def test_example_connections():
    inventory = load_inventory([str(EXAMPLE)], ssh_config_file=os.devnull)
    node = inventory.host("node03").connection
    assert node.proxy_jump == "deploy@bastion.example.net"
    assert node.known_hosts_file == str(EXAMPLE / "known_hosts")
    assert node.user == "deploy" and node.connect_timeout_s == 15.0
    assert inventory.host("a100-a").connection.user == "ubuntu"
    bastion = inventory.host("bastion").connection
    assert bastion.proxy_jump is None and bastion.host == "bastion.example.net"


def test_example_canary_node_overrides_its_group():
    inventory = load_inventory([str(EXAMPLE)], ssh_config_file=os.devnull)
    assert inventory.host("node03").vars["tritonops_max_num_seqs"] == 64
    assert inventory.host("node02").vars["tritonops_max_num_seqs"] == 256
    assert inventory.host("a100-b").vars["tritonops_tensor_parallel_size"] == 4
