"""A Ray cluster member's command lines (issue #28), by equality, and the values they refuse."""

from dataclasses import replace

import pytest

from tritonops.errors import InputError
from tritonops.serving.ray_node import RayNodeSpec, RayPorts, node_env, run_argv, shm_bytes, start_argv
from tritonops.serving.ray_version import RAY_REQUIREMENT, RAY_VERSION

IMAGE = "sha256:" + "7" * 64
TOKEN = "/opt/tritonops/prod/ray/token"
HEAD = RayNodeSpec(role="head", node_ip="10.0.0.11", image=IMAGE, token_file=TOKEN, num_gpus=8,
                   nccl_ifname="ens1f0", gloo_ifname="ens1f0")
WORKER = replace(HEAD, role="worker", node_ip="10.0.0.12", head_ip="10.0.0.11")
NODE_PORTS = ("--node-manager-port=6700", "--object-manager-port=6701", "--dashboard-agent-grpc-port=6702",
              "--dashboard-agent-listen-port=6703", "--metrics-export-port=6704", "--runtime-env-agent-port=6705",
              "--min-worker-port=10002", "--max-worker-port=10999")


def test_the_head_starts_in_the_foreground_on_its_address_with_every_port_pinned_and_no_dashboard():
    assert start_argv(HEAD) == (
        "ray", "start", "--block", "--disable-usage-stats", "--node-ip-address=10.0.0.11",
        "--head", "--port=6379", "--include-dashboard=false",
        *NODE_PORTS, "--num-gpus=8")


def test_a_worker_dials_the_heads_gcs_and_pins_the_same_node_ports():
    assert start_argv(WORKER) == (
        "ray", "start", "--block", "--disable-usage-stats", "--node-ip-address=10.0.0.12",
        "--address=10.0.0.11:6379", *NODE_PORTS, "--num-gpus=8")


def test_the_dashboard_listens_on_the_nodes_address_only_when_asked_and_the_object_store_is_sized():
    argv = start_argv(replace(HEAD, dashboard=True, object_store_bytes=100 << 20))
    assert argv[7:10] == ("--include-dashboard=true", "--dashboard-host=10.0.0.11", "--dashboard-port=8265")
    assert argv[-1] == f"--object-store-memory={100 << 20}"


def test_an_ipv6_head_is_bracketed_in_the_gcs_address():
    worker = replace(WORKER, node_ip="fd00::12", head_ip="fd00::11")
    assert "--address=[fd00::11]:6379" in start_argv(worker)
    assert worker.gcs_address == "[fd00::11]:6379"


def test_the_environment_turns_token_auth_on_names_the_token_file_and_the_interfaces():
    assert node_env(WORKER) == (("RAY_AUTH_MODE", "token"), ("RAY_AUTH_TOKEN_PATH", TOKEN),
                                ("VLLM_HOST_IP", "10.0.0.12"), ("NCCL_SOCKET_IFNAME", "ens1f0"),
                                ("GLOO_SOCKET_IFNAME", "ens1f0"))
    assert node_env(replace(HEAD, nccl_ifname=None, gloo_ifname=None)) == (
        ("RAY_AUTH_MODE", "token"), ("RAY_AUTH_TOKEN_PATH", TOKEN), ("VLLM_HOST_IP", "10.0.0.11"))


def test_docker_run_for_a_worker_host_network_ipc_host_its_gpus_and_the_token_file_read_only():
    assert run_argv(replace(WORKER, gpus=(0, 1, 2, 3, 4, 5, 6, 7))) == (
        "docker", "run", "--detach", "--name", "tritonops-ray", "--network", "host", "--restart", "no",
        "--ipc", "host", "--gpus", '"device=0,1,2,3,4,5,6,7"',
        "--env", "RAY_AUTH_MODE=token", "--env", f"RAY_AUTH_TOKEN_PATH={TOKEN}", "--env", "VLLM_HOST_IP=10.0.0.12",
        "--env", "NCCL_SOCKET_IFNAME=ens1f0", "--env", "GLOO_SOCKET_IFNAME=ens1f0",
        "--volume", f"{TOKEN}:{TOKEN}:ro", IMAGE, *start_argv(WORKER))


def test_a_sized_shared_memory_replaces_ipc_host_and_the_gpus_default_to_the_first_ones():
    argv = run_argv(replace(HEAD, shm_size="16g", num_gpus=2, container="tritonops-prod-ray"))
    assert argv[3:13] == ("--name", "tritonops-prod-ray", "--network", "host", "--restart", "no",
                          "--shm-size", "16g", "--gpus", '"device=0,1"')
    assert "--ipc" not in argv


def test_no_token_value_reaches_the_command_line():
    argv = run_argv(WORKER)
    assert not any(a.startswith("RAY_AUTH_TOKEN=") for a in argv)
    assert ("--volume", f"{TOKEN}:{TOKEN}:ro") == argv[argv.index(IMAGE) - 2:argv.index(IMAGE)]


def test_the_head_and_worker_ports_to_open():
    ports = RayPorts()
    assert ports.node_ports("head") == (6379, 6700, 6701, 6702, 6703, 6704, 6705)
    assert ports.node_ports("worker") == (6700, 6701, 6702, 6703, 6704, 6705)


def test_the_pin_is_the_cgraph_extra_of_a_ray_with_token_auth():
    major, minor, _ = (int(p) for p in RAY_VERSION.split("."))
    assert (major, minor) >= (2, 52) and RAY_REQUIREMENT == f"ray[cgraph]=={RAY_VERSION}"


@pytest.mark.parametrize("change, where, words", [
    ({"node_ip": "gpu-1.example"}, "ray node_ip", "is not an IP address"),
    ({"node_ip": "0.0.0.0"}, "ray node_ip", "cannot be a cluster node's address"),
    ({"node_ip": "127.0.0.1"}, "ray node_ip", "cannot be a cluster node's address"),
    ({"node_ip": "10.0.0.11; reboot"}, "ray node_ip", "is not an IP address"),
    ({"role": "worker"}, "ray head_ip", "needs the head's address"),
    ({"head_ip": "10.0.0.12"}, "ray head_ip", "takes no head address"),
    ({"role": "primary"}, "ray role", "head or worker"),
    ({"token_file": "token"}, "ray token_file", "absolute path"),
    ({"token_file": "/a/b:rw"}, "ray token_file", "absolute path"),
    ({"num_gpus": -1}, "ray num_gpus", "from 0 to 64"),
    ({"num_gpus": True}, "ray num_gpus", "from 0 to 64"),
    ({"gpus": (0, 0, 1, 2, 3, 4, 5, 6)}, "ray gpus", "distinct device indices"),
    ({"gpus": (0, 1)}, "ray gpus", "8 distinct"),
    ({"nccl_ifname": "eth0 --x"}, "ray nccl_ifname", "not a network interface list"),
    ({"gloo_ifname": "averyveryverylongname0"}, "ray gloo_ifname", "not a network interface list"),
    ({"nccl_ifname": "eth0,^lo"}, "ray nccl_ifname", "not a network interface list"),
    ({"shm_size": "2g"}, "ray shm_size", "below 10 GiB"),
    ({"shm_size": "lots"}, "ray shm_size", "not a size"),
    ({"object_store_bytes": 1000}, "ray object_store_bytes", "at least"),
    ({"container": "../ray"}, "ray container", "not allowed"),
])
def test_bad_node_values_are_one_line_errors_naming_the_field(change, where, words):
    with pytest.raises(InputError) as caught:
        replace(HEAD, **change)
    assert caught.value.where == where and words in caught.value.what and "\n" not in str(caught.value)


def test_the_interface_lists_nccl_accepts():
    for value in ("eth0", "ens1f0,ens1f1", "^lo,docker0", "=eth0", "bond0.100"):
        assert replace(HEAD, nccl_ifname=value).nccl_ifname == value


@pytest.mark.parametrize("ports, words", [
    ({"gcs": 80}, "from 1024 to 65535"),
    ({"object_manager": 6700}, "node_manager and object_manager are both 6700"),
    ({"metrics_export": 10500}, "inside the worker range"),
    ({"min_worker": 11000}, "first is above the last"),
])
def test_ports_that_overlap_or_are_out_of_range_are_refused(ports, words):
    with pytest.raises(InputError, match=words):
        RayPorts(**ports)


def test_shm_sizes_in_dockers_units():
    assert shm_bytes("10g") == 10 << 30 and shm_bytes("10240m") == 10 << 30 and shm_bytes("512") == 512
