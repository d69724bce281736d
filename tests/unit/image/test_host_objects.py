"""What prune reads of a host's docker engine: the docker_objects program run against this machine's real engine
(python3 -c, nothing of tritonops on the path), and its parser into the decision's shapes."""

import json
import os
import subprocess
import sys

import pytest

from tritonops.errors import TritonopsError
from tritonops.image.host_objects import is_vllm_env_tag, parse_docker_objects, read_docker_objects
from tritonops.planning.prune import ContainerOnHost, ImageOnHost
from tritonops.transport.local import LocalTransport

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64


def test_the_program_lists_every_image_and_container_the_engine_has():
    images, containers = read_docker_objects(LocalTransport("here"))  # this machine as a host: python3 -c, over sh
    listed = subprocess.run(["docker", "images", "-q", "--no-trunc"], capture_output=True, text=True).stdout.split()
    assert sorted(i.id for i in images) == sorted(set(listed))
    names = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True)
    assert sorted(c.name for c in containers) == sorted(names.stdout.split())
    running = subprocess.run(["docker", "ps", "--format", "{{.Names}}"], capture_output=True, text=True)
    assert sorted(c.name for c in containers if c.running) == sorted(running.stdout.split())
    assert all(c.image_id.startswith("sha256:") for c in containers)


def test_the_parser_names_the_vllm_env_images_and_the_one_the_next_deploy_runs():
    stdout = json.dumps({"images": [
        {"id": A, "tags": ["tritonserver:vllm_env", "tritonserver:vllm_env-0123456789ab"], "size": 5, "labels": {}},
        {"id": B, "tags": [], "size": 7, "labels": {"tritonops.vllm_env.content": "f00"}},
        {"id": "sha256:c", "tags": ["nvcr.io/nvidia/tritonserver:24.10-py3"], "size": 9, "labels": {}}],
        "containers": [{"name": "tritonops-chat", "image": A, "running": True, "state": "running",
                        "labels": {"tritonops.deployment": "chat", "tritonops.release": "r1"}},
                       {"name": "other", "image": B, "running": False, "state": "exited", "labels": {}}]})
    assert parse_docker_objects(stdout) == (
        (ImageOnHost(A, ("tritonserver:vllm_env", "tritonserver:vllm_env-0123456789ab"), True, True, 5),
         ImageOnHost(B, (), True, False, 7),
         ImageOnHost("sha256:c", ("nvcr.io/nvidia/tritonserver:24.10-py3",), False, False, 9)),
        (ContainerOnHost("tritonops-chat", A, True, "chat", "r1"), ContainerOnHost("other", B, False)))


@pytest.mark.parametrize("tag, ours", [("tritonserver:vllm_env", True), ("reg:5000/ml/tritonserver:vllm_env-ab", True),
                                       ("tritonserver:24.10-py3", False), ("tritonserver:vllm_envy", False),
                                       ("mytritonserver:vllm_env", False)])
def test_a_vllm_env_tag_is_tritonservers_vllm_env_or_a_content_tag(tag, ours):
    assert is_vllm_env_tag(tag) is ours


@pytest.mark.parametrize("stdout", ["", "[]", '{"images": []}', '{"images": [{}], "containers": []}'])
def test_output_that_is_not_the_programs_is_an_error(stdout):
    with pytest.raises(TritonopsError):
        parse_docker_objects(stdout)


def remove_release(deployment_dir, release) -> subprocess.CompletedProcess:
    from tritonops.operations.prune import remove_release as step
    from tritonops.planning.prune import ReleaseDecision

    argv = step(ReleaseDecision("chat", release, f"{deployment_dir}/releases/{release}", True, "old")).argv
    return subprocess.run((sys.executable, *argv[1:]), capture_output=True, text=True, timeout=60, cwd="/",
                          env={"PATH": os.environ["PATH"]})


def test_a_release_folder_is_removed_with_its_size_and_a_second_time_is_nothing(tmp_path):
    folder = tmp_path / "chat" / "releases" / "r1" / "model_repository"
    folder.mkdir(parents=True)
    (folder / "config.pbtxt").write_text("x" * 100)
    done = remove_release(tmp_path / "chat", "r1")
    assert done.returncode == 0 and json.loads(done.stdout)["removed"] is True
    assert json.loads(done.stdout)["bytes"] >= 100 and not (tmp_path / "chat" / "releases" / "r1").exists()
    again = remove_release(tmp_path / "chat", "r1")
    assert again.returncode == 0 and json.loads(again.stdout) == {"removed": False, "why": "already gone"}


def test_removing_a_release_never_follows_a_symbolic_link_out(tmp_path):
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "weights.bin").write_text("keep me")
    releases = tmp_path / "chat" / "releases"
    (releases / "r2").mkdir(parents=True)
    (releases / "r1").symlink_to(outside)
    (releases / "r2" / "weights").symlink_to(outside)  # a link inside a release: unlinked, its target stays
    refused = remove_release(tmp_path / "chat", "r1")
    assert refused.returncode == 3 and "is a symbolic link: left alone" in json.loads(refused.stdout)["why"]
    assert remove_release(tmp_path / "chat", "r2").returncode == 0
    assert (outside / "weights.bin").read_text() == "keep me" and (releases / "r1").is_symlink()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "releases").symlink_to(releases)
    assert remove_release(linked, "r1").returncode == 3 and (releases / "r1").is_symlink()


def test_removing_the_release_current_points_to_or_a_name_out_of_the_folder_is_refused(tmp_path):
    (tmp_path / "chat" / "releases" / "r3").mkdir(parents=True)
    (tmp_path / "chat" / "current").symlink_to("releases/r3")
    done = remove_release(tmp_path / "chat", "r3")
    assert done.returncode == 3 and json.loads(done.stdout)["why"] == "current points to r3 now: left alone"
    for bad in ("..", "../chat", "-rf", ".r3"):
        assert remove_release(tmp_path / "chat", bad).returncode == 3
    assert (tmp_path / "chat" / "releases" / "r3").is_dir()
