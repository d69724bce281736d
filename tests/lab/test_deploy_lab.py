"""`tritonops deploy` end to end on real lab hosts over SSH: check mode changes nothing, a first run
leaves a release and verified weights, a second run changes nothing, a variable changed for one group
changes only that group's hosts, a held lock refuses that host only. (Serving the release is
tests/lab/test_serve_lab.py: here `tritonops_serve: false` stops each run after the release.)

Two inventory hosts, `a1` (group ga) and `a2` (group gb), reach the test lab's full host as two
deployments (dep-a, dep-b): each has its own folder, lock and releases there, as two machines would.
"""

import json
import os

import jsonschema
import pytest
import yaml

from tests.support.result_schema import SCHEMA as RESULT_SCHEMA
from tritonops.cli.main import main
from tritonops.deploy.lock import LockOwner, acquire
from tritonops.lab.hub import tiny_model
from tritonops.lab.testing import FULL_2080TI, LIGHT_H200X2
from tritonops.playbook.shipped import SHIPPED_ROLES
from tritonops.transport.sessions import open_transport

ROOT = "/opt/tritonops"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-llm")
    for name, data in tiny_model().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


@pytest.fixture
def inventory(lab, model_dir, tmp_path, lab_ssh):
    lab_vars = yaml.safe_load(lab.inventory_file.read_text())
    full_vars = dict(lab_vars["all"]["children"]["lab"]["children"]["lab_full"]["vars"])
    full_vars["tritonops_build_host"] = "a1"
    full_vars.pop("tritonops_model", None)  # this test names its own model
    full, light = lab.host(FULL_2080TI), lab.host(LIGHT_H200X2)

    def host(target, deployment):
        return {"ansible_host": target.address, "ansible_port": target.port, "tritonops_deployment": deployment}

    def write(ga_vars=None):
        data = {"all": {
            "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(lab.key_file),
                     "tritonops_known_hosts_file": str(lab.known_hosts_file),
                     "tritonops_model": str(model_dir), "tritonops_serve": False, **full_vars},
            "children": {
                "ga": {"hosts": {"a1": host(full, "dep-a")}, "vars": dict(ga_vars or {})},
                "gb": {"hosts": {"a2": host(full, "dep-b")}},
                "gc": {"hosts": {"l1": host(light, "dep-c")}},
            }}}
        path = tmp_path / "hosts.yml"
        path.write_text(yaml.safe_dump(data))
        return str(path)

    lab_ssh(FULL_2080TI, f"rm -rf {ROOT}/dep-a {ROOT}/dep-b")
    return write


def deploy(capsys, inventory_path, *more):
    code = main(["deploy", "-i", inventory_path, "--limit", "ga:gb", "--json", *more])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    jsonschema.validate(report, RESULT_SCHEMA)  # the one result document, with the deploy's real rows
    assert report["exit_code"] == code
    return code, report


def releases(lab_ssh, deployment) -> list[str]:
    out = lab_ssh(FULL_2080TI, f"ls {ROOT}/{deployment}/releases 2>/dev/null || true").stdout.split()
    return [name for name in out if not name.startswith(".")]


def statuses(report, host) -> dict[str, str]:
    return {r["task"]: r["status"] for r in report["results"] if r["host"] == host}


def test_check_then_deploy_then_nothing_to_do_then_only_the_changed_group(capsys, inventory, lab_ssh):
    path = inventory()
    code, check = deploy(capsys, path, "--check", "--diff")
    assert code == 0, check["results"]
    for name in ("a1", "a2"):
        diffs = "".join(r["diff"] or "" for r in check["results"] if r["host"] == name)
        assert '+backend: "vllm"' in diffs and f'"model": "{ROOT}/dep-' in diffs and "release.json" in diffs
    assert lab_ssh(FULL_2080TI, f"test -e {ROOT}/dep-a || test -e {ROOT}/dep-b", check=False).returncode == 1

    code, first = deploy(capsys, path)
    assert code == 0, first["results"]
    assert first["recap"]["a1"]["changed"] >= 3 and first["recap"]["a1"]["failed"] == 0
    (release_a,) = releases(lab_ssh, "dep-a")
    (release_b,) = releases(lab_ssh, "dep-b")
    record = json.loads(lab_ssh(FULL_2080TI, f"cat {ROOT}/dep-a/releases/{release_a}/release.json").stdout)
    assert record["image_id"].startswith("sha256:") and record["models"][0]["engine"]["max_model_len"] > 0
    model_json = json.loads(lab_ssh(
        FULL_2080TI, f"cat {ROOT}/dep-a/releases/{release_a}/model_repository/vllm_model/1/model.json").stdout)
    weights = model_json["model"]
    assert weights.startswith(f"{ROOT}/dep-a/models/")
    sums = lab_ssh(FULL_2080TI, f"cd {weights} && sha256sum model-00001-of-00002.safetensors").stdout.split()[0]
    manifest = json.loads(lab_ssh(FULL_2080TI, f"cat {weights}/.tritonops-manifest.json").stdout)
    assert {f["path"]: f["sha256"] for f in manifest["files"]}["model-00001-of-00002.safetensors"] == sums
    assert lab_ssh(FULL_2080TI, f"test -e {ROOT}/dep-a/lock", check=False).returncode == 1  # unlocked after

    # what the real run would refuse on the host, --check says too (issue #45 item 16): sshd listens on :22
    code, refused = deploy(capsys, path, "--check", "--limit", "a1", "-e", "tritonops_http_port=22",
                           "-e", "tritonops_serve=true")  # this inventory serves nothing; the check would
    serve = [r for r in refused["results"] if r["task"].startswith("Triton serves")]
    assert code == 2 and [r["status"] for r in serve] == ["failed"], refused["results"]
    assert serve[0]["msg"] == "refused, nothing stopped: replica 0: port in use: 22 is bound by another process"
    assert releases(lab_ssh, "dep-a") == [release_a]  # nothing was made

    code, second = deploy(capsys, path)
    assert code == 0
    assert {r["status"] for r in second["results"] if r["status"] != "skipped"} == {"ok"}, second["results"]
    assert second["image_bytes_sent"] == 0
    assert releases(lab_ssh, "dep-a") == [release_a] and releases(lab_ssh, "dep-b") == [release_b]

    code, changed = deploy(capsys, inventory({"tritonops_max_num_seqs": 8}))
    assert code == 0
    assert statuses(changed, "a1")["release with the rendered model repository"] == "changed"
    assert {r["status"] for r in changed["results"] if r["host"] == "a2"} == {"ok", "skipped"}
    assert len(releases(lab_ssh, "dep-a")) == 2 and releases(lab_ssh, "dep-b") == [release_b]


def test_a_held_lock_refuses_that_host_only_and_names_the_owner(capsys, inventory, lab, lab_ssh):
    path = inventory()
    transport = open_transport(lab.connection(FULL_2080TI))
    try:
        other = LockOwner("t0ken", "alice", "ctl-7", 4242, "deploy", "2026-12-01T07:00:00Z")
        assert acquire(transport, f"{ROOT}/dep-b", other).acquired
        code, report = deploy(capsys, path)
    finally:
        transport.close()
    assert code == 2  # a host failed (its lock)
    lock = [r for r in report["results"] if r["host"] == "a2" and r["task"] == "lock"][0]
    assert lock["status"] == "failed" and "alice@ctl-7 (pid 4242, deploy since 2026-12-01T07:00:00Z)" in lock["msg"]
    assert not [r for r in report["results"] if r["host"] == "a2" and r["task"] not in ("facts", "plan", "lock")]
    assert report["recap"]["a1"]["failed"] == 0 and len(releases(lab_ssh, "dep-a")) == 1
    assert "alice" in lab_ssh(FULL_2080TI, f"cat {ROOT}/dep-b/lock").stdout  # someone else's lock is left alone


def test_a_host_without_docker_fails_at_the_image_and_the_others_go_on(capsys, inventory, lab_ssh):
    path = inventory()
    code = main(["deploy", "-i", path, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 2  # a host failed (its image)
    image = [r for r in report["results"] if r["host"] == "l1" and r["task"] == "image"][0]
    assert image["status"] == "failed" and "docker" in image["msg"].lower()
    assert report["recap"]["a1"]["failed"] == 0 and report["recap"]["a2"]["failed"] == 0
    assert releases(lab_ssh, "dep-a") and releases(lab_ssh, "dep-b")
    assert lab_ssh(LIGHT_H200X2, f"test -e {ROOT}/dep-c/releases", check=False).returncode == 1


def test_an_undefined_variable_stops_the_deploy_before_any_write(capsys, inventory, lab_ssh, tmp_path):
    tasks = tmp_path / "roles" / "broken" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "main.yml").write_text("- name: a folder\n  directory:\n"
                                    "    path: \"{{ tritonops_deploy.root }}/{{ no_such_variable }}\"\n")
    (tmp_path / "play.yml").write_text("- name: p\n  hosts: all\n  roles: [preflight, broken]\n")
    code = main(["deploy", "-i", inventory(), "--limit", "ga", "--playbook", str(tmp_path / "play.yml"),
                 "--roles-path", str(SHIPPED_ROLES)])
    err = capsys.readouterr().err.splitlines()
    assert code == 5  # bad input (the playbook)
    assert err[-1].startswith("error: ") and "main.yml:3" in err[-1] and "no_such_variable" in err[-1]
    assert lab_ssh(FULL_2080TI, f"test -e {ROOT}/dep-a", check=False).returncode == 1  # not even the lock


def test_one_deploy_reads_its_inputs_once_and_writes_the_files_plan_shows(capsys, inventory, monkeypatch, lab_ssh):
    """Every phase (facts, plan, lock, image, both compiles, the run, events, targets) works from the
    inputs read once: each YAML file is opened once (they are read through values.files, by os.open).
    Then `tritonops plan` shows the model repository the deploy wrote, byte for byte."""
    from tritonops.cli.cmd_deploy import default_playbook

    path = inventory()
    opened: dict[str, int] = {}
    real_open = os.open

    def counting(file, *args, **kwargs):
        name = os.path.realpath(os.fspath(file)) if isinstance(file, (str, os.PathLike)) else None
        if name and name.endswith((".yml", ".yaml")):
            opened[name] = opened.get(name, 0) + 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    code, report = deploy(capsys, path)
    monkeypatch.setattr(os, "open", real_open)
    assert code == 0, report["results"]
    playbook = os.path.realpath(default_playbook("deploy.yml"))
    assert opened[os.path.realpath(path)] == 1 and opened[playbook] == 1
    roles = {name: count for name, count in opened.items() if "/roles/" in name}
    assert len(roles) >= 6 and set(roles.values()) == {1}, opened
    assert set(opened.values()) == {1}, opened

    assert main(["plan", "-i", path, "--limit", "ga:gb", "--json"]) == 0
    planned = {row["host"]: row["payload"]["repository"] for row in json.loads(capsys.readouterr().out)["results"]}
    for host, deployment in (("a1", "dep-a"), ("a2", "dep-b")):
        newest = releases(lab_ssh, deployment)[-1]
        for name in ("vllm_model/1/model.json", "vllm_model/config.pbtxt"):
            written = lab_ssh(FULL_2080TI, f"cat {ROOT}/{deployment}/releases/{newest}/model_repository/{name}").stdout
            assert planned[host][name] == written, (host, name)
