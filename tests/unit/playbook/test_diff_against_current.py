"""--diff against what the host serves: a new release's files compared with the serving release's, only what
changes shown, and for each replica whether its container restarts and which field makes it."""

import json
import os

import pytest

from tests.support.paths import FIXTURES
from tests.support.serve_records import serve_record
from tritonops.facts.queries import CommandFact, DirFact, Facts, FileFact
from tritonops.facts.query_program import read_facts
from tritonops.operations.execute import run_step
from tritonops.operations.serve import ServeStep
from tritonops.playbook.diffs import file_diffs
from tritonops.playbook.known_operations import operation_named
from tritonops.serving.container import logging_digest
from tritonops.serving.rollout_facts import containers_query
from tritonops.transport.local import LocalTransport
from tritonops.values.containers import replica_container

HOST = LocalTransport("local")
ENGINE = {"model": "/opt/tritonops/default/models/m@main", "max_num_seqs": 256, "max_model_len": 4096}


def release_args(root, created, **engine):
    files = {"chat/config.pbtxt": 'backend: "vllm"\n', "chat/1/model.json": json.dumps({**ENGINE, **engine}) + "\n"}
    return {"root": str(root), "files": files, "image_id": "sha256:abc", "created": created,
            "metadata": {"who": "me", "serve": serve_record(models=["chat"]).to_release()}}


def steps_and_facts(name, arguments):
    operation = operation_named(name)
    args = operation.Args.model_validate(arguments)
    facts = read_facts(HOST, list(operation.facts(args)))
    return list(operation.steps(args, facts)), facts


def serving(root, created, **engine):
    """A release written and made current, as a deploy leaves it."""
    steps, _ = steps_and_facts("release", release_args(root, created, **engine))
    for step in steps:
        run_step(HOST, step)
    (release,) = [name for name in os.listdir(root / "releases") if name.startswith(created)]
    os.symlink(f"releases/{release}", root / "current")
    return release


def test_a_one_value_change_diffs_against_the_serving_release_and_shows_only_that_value(tmp_path):
    release = serving(tmp_path, "20261201T080000Z")
    record = tmp_path / "releases" / release / "release.json"  # the serve program appends its gate, as json.dump
    body = json.loads(record.read_text())
    body["gates"] = [{"passed": True, "log_tail": ["I1202 Started GRPCInferenceService at 0.0.0.0:8001"] * 40}]
    record.write_text(json.dumps(body, indent=2) + "\n")
    steps, facts = steps_and_facts("release", release_args(tmp_path, "20261202T080000Z", max_num_seqs=128))
    diff = file_diffs(HOST, steps, facts)
    assert "/dev/null" not in diff
    assert f"--- {tmp_path}/current/model_repository/chat/1/model.json" in diff
    assert '-{"model": "/opt/tritonops/default/models/m@main", "max_num_seqs": 256' in diff
    assert '+{"model": "/opt/tritonops/default/models/m@main", "max_num_seqs": 128' in diff
    assert "model_repository/chat/config.pbtxt" not in diff  # the same text: nothing shown
    assert "gates" not in diff and "GRPCInferenceService" not in diff  # the host's own record is no change
    release_json = diff.split(f"--- {tmp_path}/current/release.json")[1]
    changed = [line for line in release_json.splitlines() if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))]
    # the id, the time, the content digest and the model.json hash: not the 20-odd lines of a whole new file
    assert 4 <= len(changed) <= 8, release_json
    assert all(key in release_json for key in ('"id"', '"created"', '"content_digest"', '"chat/1/model.json"'))


def test_the_first_release_of_a_host_is_whole_new_files(tmp_path):
    steps, facts = steps_and_facts("release", release_args(tmp_path, "20261201T080000Z"))
    diff = file_diffs(HOST, steps, facts)
    assert diff.count("--- /dev/null") == 3


def serve_args(root, release_arguments):
    return {"release": release_arguments, "deployment": "default", "host_name": "h1",
            "serve": {"models": ["chat"], "replicas": [{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]},
                                                       {"index": 1, "gpus": [1], "ports": [8010, 8011, 8012]}],
                      "weights_dirs": [], "deadline_s": 300, "kv_cache_tokens": 0}}


PROC_NET = FIXTURES / "proc_net"  # a lab host's socket tables: sshd on :22


def serve_facts(root, args, containers, current_json, current_model_json, tcp=None):
    operation = operation_named("serve_release")
    parsed = operation.Args.model_validate(args)
    logging = logging_digest(parsed.shipping("default"))
    facts = [DirFact(f"{root}/releases", True, ()), FileFact(f"{root}/current", "link", link_target="releases/old"),
             FileFact(f"{root}/current/release.json", "file", text=current_json),
             FileFact(f"{root}/current/model_repository/chat/1/model.json", "file", text=current_model_json),
             FileFact("/proc/net/tcp", "file", text=tcp or (PROC_NET / "lab-host-tcp").read_text()),
             FileFact("/proc/net/tcp6", "file", text=(PROC_NET / "lab-host-tcp6").read_text())]
    listed = {}  # the deployment's containers as the listing program tells them
    for index, words in containers.items():
        if words:
            release, running, image, restarts, digest = " ".join(words).replace("{logging}", logging).split()
            listed[replica_container("default", index)] = {"release": release, "running": running == "true",
                                                            "image": image, "restarts": int(restarts),
                                                            "logging": digest}
    facts.append(CommandFact(containers_query("default").argv, 0, json.dumps(listed)))
    (step,) = operation.steps(parsed, Facts.of(*facts))
    assert isinstance(step, ServeStep)
    return step


def test_each_replica_says_whether_it_restarts_and_which_field_makes_it(tmp_path):
    old = release_args(tmp_path, "20261201T080000Z")
    new = release_args(tmp_path, "20261202T080000Z", max_num_seqs=128)
    current = {"id": "20261201T080000Z-aaaaaaaa", "files": {
        "chat/config.pbtxt": __import__("hashlib").sha256(old["files"]["chat/config.pbtxt"].encode()).hexdigest(),
        "chat/1/model.json": "0" * 64},
        "serve": {"models": ["chat"], "replicas": [{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]},
                                                   {"index": 1, "gpus": [2], "ports": [8010, 8011, 8012]}],
                  "weights_dirs": [], "deadline_s": 300, "kv_cache_tokens": 0}}
    containers = {0: ["20261201T080000Z-aaaaaaaa", "true", "sha256:abc", "0", "{logging}"],
                  1: ["20261201T080000Z-aaaaaaaa", "false", "sha256:old", "3", "{logging}"]}
    step = serve_facts(tmp_path, serve_args(tmp_path, new), containers, json.dumps(current),
                       old["files"]["chat/1/model.json"])
    zero, one = step.restarts
    assert zero.startswith(f"replica 0 ({replica_container('default', 0)}) restarts: release 20261201T080000Z-aaaaaaaa -> "
                           "20261202T080000Z-"), zero
    assert "(chat/1/model.json: max_num_seqs 256 -> 128)" in zero and "config.pbtxt" not in zero
    assert "gpus" not in zero and "image" not in zero
    assert "its container is not running" in one and "gpus [2] -> [1]" in one and "image old -> abc" in one
    assert step.diff_text() == zero + "\n" + one + "\n"  # what restarts and why; each docker run only with -v
    assert [detail.split(": docker run ")[0] for detail in step.details()] == [
        f"{replica_container('default', 0)} on release {step.spec.release}",
        f"{replica_container('default', 1)} on release {step.spec.release}"]


def test_a_replica_already_on_the_release_keeps_running(tmp_path):
    new = release_args(tmp_path, "20261202T080000Z")
    step = serve_facts(tmp_path, serve_args(tmp_path, new), {0: [], 1: []}, "{}", "{}")
    release = step.spec.release
    containers = {0: [release, "true", "sha256:abc", "0", "{logging}"], 1: []}
    step = serve_facts(tmp_path, serve_args(tmp_path, new), containers, "{}", "{}")
    assert step.restarts == (f"replica 0 ({replica_container('default', 0)}) keeps running release {release}: "
                             "nothing it runs changes",
                             f"replica 1 ({replica_container('default', 1)}) restarts: no container yet")


def test_a_port_another_process_binds_refuses_the_serve_task_before_anything_stops_in_check_mode_too(tmp_path):
    """Issue #45 item 16: what the serve program would refuse on the host (a replica's port bound by a process that
    is none of the deployment's replicas) is refused by the task itself, read-only, so --check says it."""
    from tritonops.errors import TritonopsError

    old = release_args(tmp_path, "20261201T080000Z")
    new = release_args(tmp_path, "20261202T080000Z", max_num_seqs=128)
    current = {"id": "20261201T080000Z-aaaaaaaa", "files": {}, "serve": serve_record(replicas=[
        {"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]}]).to_release()}
    # replica 0 runs (its own ports are its own); replica 1 has no container and 8010 has a listener
    containers = {0: ["20261201T080000Z-aaaaaaaa", "true", "sha256:abc", "0", "{logging}"], 1: []}
    taken = (PROC_NET / "lab-host-tcp").read_text() + \
        "   9: 00000000:1F4A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n"  # :8010
    held_by_replica_0 = (PROC_NET / "lab-host-tcp").read_text() + \
        "   9: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n"  # :8000
    with pytest.raises(TritonopsError, match=r"^refused, nothing stopped: replica 1: port in use: 8010 is bound by "
                                             r"another process$"):
        serve_facts(tmp_path, serve_args(tmp_path, new), containers, json.dumps(current),
                    old["files"]["chat/1/model.json"], tcp=taken)
    step = serve_facts(tmp_path, serve_args(tmp_path, new), containers, json.dumps(current),
                       old["files"]["chat/1/model.json"], tcp=held_by_replica_0)
    assert len(step.specs) == 2  # :8000 is replica 0's own (Docker publishes it): no refusal
