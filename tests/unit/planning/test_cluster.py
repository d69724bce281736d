"""The unit above the host: which hosts form a pipeline's Ray cluster, checked before anything is touched."""

import pytest

from tritonops.errors import InputError
from tritonops.planning.cluster import Cluster, ClusterError, ClusterHost, form_cluster
from tritonops.values.network import interface_names, node_address
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog

H100X8 = gpu_spec_from_catalog("h100:8")


def host(name, address, gpus=H100X8, interface=None):
    return ClusterHost(name, address, gpus, interface)


def test_the_first_hosts_form_the_cluster_head_first_one_stage_each():
    hosts = [host("g1", "10.0.0.1", interface="ib0"), host("g2", "10.0.0.2"), host("g3", "10.0.0.3")]
    cluster = form_cluster("llama405", hosts, 8, 126, pipeline_parallel_size=2)
    assert (cluster.head.host, [w.host for w in cluster.workers]) == ("g1", ["g2"])
    assert [(m.stage, m.first_layer, m.layers) for m in cluster.members] == [(0, 0, 63), (1, 63, 63)]
    assert cluster.to_release() == {
        "name": "llama405", "head": "g1", "workers": ["g2"], "tensor_parallel_size": 8, "pipeline_parallel_size": 2,
        "members": [{"host": "g1", "address": "10.0.0.1", "stage": 0, "layers": [0, 62], "interface": "ib0"},
                    {"host": "g2", "address": "10.0.0.2", "stage": 1, "layers": [63, 125], "interface": None}]}
    assert Cluster.from_release(cluster.to_release()) == cluster
    assert cluster.member("g2").stage == 1 and cluster.member("g3") is None


def test_members_with_other_gpus_are_refused_naming_the_host():
    mixed = [host("g1", "10.0.0.1"), host("g2", "10.0.0.2", gpu_spec_from_catalog("a100-80gb:8"))]
    with pytest.raises(ClusterError, match=r"^cluster c: g2 has 8 x NVIDIA A100-SXM4-80GB, the head g1 8 x "
                                           r"NVIDIA H100 80GB HBM3: every member needs the same GPUs"):
        form_cluster("c", mixed, 8, 80)
    fewer = [host("g1", "10.0.0.1"), host("g2", "10.0.0.2", gpu_spec_from_catalog("h100:4"))]
    with pytest.raises(ClusterError, match="g2 has 4 x NVIDIA H100"):
        form_cluster("c", fewer, 4, 80)


@pytest.mark.parametrize("hosts, tp, pp, message", [
    ([host("g1", "10.0.0.1")], 8, None, "needs at least 2 hosts, not 1"),
    ([host("g1", "10.0.0.1"), host("g2", "10.0.0.2")], 8, 3, "pipeline_parallel_size 3 needs 3 hosts; the group has 2"),
    ([host("g1", "10.0.0.1"), host("g2", "10.0.0.1")], 8, None, "g2 and g1 have the same address 10.0.0.1"),
    ([host("g1", "10.0.0.1"), host("g2", "10.0.0.2")], 16, None, "tensor_parallel_size 16 needs more GPUs"),
])
def test_a_cluster_that_cannot_form_says_why(hosts, tp, pp, message):
    with pytest.raises(ClusterError, match=message):
        form_cluster("c", hosts, tp, 80, pp)


def test_addresses_and_interfaces_are_checked_where_they_are_read():
    assert node_address("10.1.2.3", "inventory.yml:4") == "10.1.2.3"
    assert node_address("[fd00::7]", "x") == "fd00::7"
    with pytest.raises(InputError, match=r"^inventory.yml:4: 'gpu-1.lan' is not an IP address"):
        node_address("gpu-1.lan", "inventory.yml:4")
    for unreachable in ("127.0.0.1", "::1", "0.0.0.0", "224.0.0.1"):
        with pytest.raises(InputError, match="cannot be a cluster node's address"):
            node_address(unreachable, "x")
    assert interface_names("enp65s0f0", "x") == "enp65s0f0" and interface_names("^lo,docker0", "x") == "^lo,docker0"
    for bad in ("eth0; rm -rf /", "", "eth0,^lo", "a" * 16):
        with pytest.raises(InputError, match="is not a network interface list"):
            interface_names(bad, "x")
