"""A pipeline member's release (issue #28): its Ray node and, on the head, Triton as the Ray driver, from the
`cluster` entry release.json keeps; the head's view of the members for `status`; the controller's token store.
Pure parts by equality; the token store on a real folder."""

import os
import stat
from dataclasses import replace

import pytest

from tritonops.deploy.ray_tokens import cluster_token
from tritonops.errors import InputError
from tritonops.modes.openai import OPENAI
from tritonops.planning.serve_record import ClusterRecord
from tritonops.serving.container import Ports, ServeSpec, run_argv
from tritonops.serving.ray_member import (LABEL_RAY, LABEL_RAY_SPEC, NODES_SCRIPT, cluster_view, parse_nodes,
                                          ray_member, token_digest)
from tritonops.serving.ray_node import run_argv as node_argv

IMAGE = "sha256:" + "5" * 64
ROOT = "/opt/tritonops/chat"
CLUSTER = {"name": "big", "head": "g1", "workers": ["g2"], "tensor_parallel_size": 2, "pipeline_parallel_size": 2,
           "members": [{"host": "g1", "address": "10.0.0.1", "stage": 0, "layers": [0, 39], "interface": "ens1"},
                       {"host": "g2", "address": "10.0.0.2", "stage": 1, "layers": [40, 79], "interface": "ens1"}],
           "host": "g1", "gpus": [0, 1], "token": token_digest("t" * 64), "object_store_bytes": None}


def member(cluster: dict, *args):
    """The member a release's `cluster` entry (its JSON form) says."""
    return ray_member(ClusterRecord.from_json(cluster), *args)


def view(cluster: dict, *args):
    return cluster_view(ClusterRecord.from_json(cluster), *args)


def test_the_heads_node_mounts_its_session_folder_and_carries_the_digest_of_its_run_and_token():
    head = member(CLUSTER, ROOT, "chat", IMAGE)
    argv = node_argv(head.node)
    assert head.role == "head" and head.node.container == "tritonops-chat-ray"
    assert argv[:12] == ("docker", "run", "--detach", "--name", "tritonops-chat-ray", "--network", "host",
                         "--restart", "no", "--label", f"{LABEL_RAY}=chat", "--label")
    assert argv[12] == f"{LABEL_RAY_SPEC}={head.digest}" and len(head.digest) == 16
    assert ("--volume", f"{ROOT}/ray/token:{ROOT}/ray/token:ro", "--volume", f"{ROOT}/ray/session:/tmp/ray",
            IMAGE, "ray", "start") == argv[argv.index("--volume"):argv.index("start") + 1]
    assert "--env" in argv and "NCCL_SOCKET_IFNAME=ens1" in argv and '"device=0,1"' in argv
    assert head.addresses == ("10.0.0.1", "10.0.0.2") and head.gpus_per_node == 2
    assert (head.driver.node_container, head.driver.gcs_address, head.driver.temp_dir) == \
        ("tritonops-chat-ray", "10.0.0.1:6379", f"{ROOT}/ray/session")


def test_a_worker_dials_the_head_and_has_no_driver_nor_session_folder():
    worker = member({**CLUSTER, "host": "g2"}, ROOT, "chat", IMAGE)
    argv = node_argv(worker.node)
    assert worker.role == "worker" and worker.driver is None
    assert "--address=10.0.0.1:6379" in argv and "--node-ip-address=10.0.0.2" in argv
    assert not any(a.endswith(":/tmp/ray") for a in argv)
    assert worker.program_input(120.0)["gcs"] == ["10.0.0.1", 6379]
    assert worker.program_input(120.0)["nodes_script"] == NODES_SCRIPT


def test_the_nodes_digest_changes_with_its_image_token_or_head_and_not_otherwise():
    worker = {**CLUSTER, "host": "g2"}
    digest = member(worker, ROOT, "chat", IMAGE).digest
    assert member(dict(worker), ROOT, "chat", IMAGE).digest == digest
    moved_head = [{**CLUSTER["members"][0], "address": "10.0.0.9"}, CLUSTER["members"][1]]
    others = [member(worker, ROOT, "chat", "sha256:" + "6" * 64),
              member({**worker, "token": token_digest("u" * 64)}, ROOT, "chat", IMAGE),
              member({**worker, "members": moved_head}, ROOT, "chat", IMAGE)]
    assert len({digest, *(m.digest for m in others)}) == 4
    # the head's node runs the same whatever its workers' addresses (Triton restarts: another release)
    moved_worker = [CLUSTER["members"][0], {**CLUSTER["members"][1], "address": "10.0.0.8"}]
    assert member({**CLUSTER, "members": moved_worker}, ROOT, "chat", IMAGE).digest == \
        member(CLUSTER, ROOT, "chat", IMAGE).digest


def test_an_incomplete_cluster_entry_is_one_line():
    with pytest.raises(InputError, match="the release's cluster entry is incomplete"):
        member({**CLUSTER, "host": "g3"}, ROOT, "chat", IMAGE)


def test_the_heads_triton_is_the_ray_driver_on_the_hosts_network_in_the_nodes_pid_namespace():
    head = member(CLUSTER, ROOT, "chat", IMAGE)
    spec = ServeSpec(deployment="chat", release="r1", release_dir=f"{ROOT}/releases/r1", image_id=IMAGE, gpus=(0, 1),
                     ports=Ports(8000, 8001, 8002, "10.0.0.1"), ray=head.driver)
    argv = run_argv(spec)
    assert "--publish" not in argv
    at = argv.index("--network")
    assert argv[at:at + 4] == ("--network", "host", "--pid", "container:tritonops-chat-ray")
    for env in ("RAY_AUTH_MODE=token", f"RAY_AUTH_TOKEN_PATH={ROOT}/ray/token", "RAY_ADDRESS=10.0.0.1:6379",
                "VLLM_HOST_IP=10.0.0.1"):
        assert env in argv
    assert f"{ROOT}/ray/token:{ROOT}/ray/token:ro" in argv and f"{ROOT}/ray/session:/tmp/ray" in argv
    assert argv[-6:] == ("--http-port=8000", "--http-address=10.0.0.1", "--grpc-port=8001",
                         "--grpc-address=10.0.0.1", "--metrics-port=8002", "--metrics-address=10.0.0.1")
    with pytest.raises(ValueError, match="the openai mode cannot serve a pipeline across hosts"):
        run_argv(replace(spec, mode=OPENAI))


def test_the_heads_view_names_the_members_ray_does_not_list():
    whole = view(CLUSTER, "running", [{"ip": "10.0.0.1", "gpus": 2.0}, {"ip": "10.0.0.2", "gpus": 2.0}])
    assert whole.whole and whole.missing == () and whole.said() == "pipeline head of cluster big, 2 members in Ray"
    short = view(CLUSTER, "running", [{"ip": "10.0.0.1", "gpus": 2.0}, {"ip": "10.0.0.2", "gpus": 1.0}])
    assert not short.whole and short.missing == ("g2",)
    assert short.said() == ("cluster big degraded: Ray lists 1 of 2 members, missing g2 (10.0.0.2) (the next deploy "
                            "heals it)")
    assert view(CLUSTER, "running", None).said() == "cluster big: Ray did not answer on the head"
    worker = view({**CLUSTER, "host": "g2"}, "exited", None)
    assert worker.role == "worker" and not worker.whole
    assert worker.said() == ("its Ray node is exited: the pipeline of cluster big cannot serve (the next deploy "
                             "restarts it)")
    assert view({**CLUSTER, "host": "g2"}, "running", None).whole


def test_the_nodes_answer_is_its_last_json_line():
    assert parse_nodes('warning\n[{"ip": "10.0.0.1", "gpus": 1.0}]\n') == [{"ip": "10.0.0.1", "gpus": 1.0}]
    assert parse_nodes("Traceback ...") is None and parse_nodes("") is None and parse_nodes("{}") is None


def test_each_clusters_token_is_made_once_kept_0600_and_found_again(tmp_path):
    first = cluster_token("chat", "big", tmp_path)
    assert len(first) == 64 and cluster_token("chat", "big", tmp_path) == first
    assert cluster_token("chat", "other", tmp_path) != first and cluster_token("code", "big", tmp_path) != first
    path = tmp_path / "chat--big.token"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and path.read_text().strip() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chat--big.token", "chat--other.token", "code--big.token"]
    with pytest.raises(InputError):
        cluster_token("../x", "big", tmp_path)
