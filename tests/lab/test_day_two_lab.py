"""Day two on a real lab host: `tritonops releases` after two deploys names the current release and the previous
one (what a rollback goes back to), and `tritonops lock` shows a lock another run holds, refuses to release it for
anyone else and frees it for its owner, both in the audit log. One deployment (`dep-daytwo`) on the test lab's
full host, on ports of its own."""

import getpass
import hashlib
import json
import socket
import time
import uuid

import pytest

from tests.lab.test_serve_lab import cli, full_host_inventory, full_host_shell
from tritonops.cli.main import main
from tritonops.deploy.lock import LockOwner, acquire
from tritonops.lab.testing import FULL_2080TI
from tritonops.transport.sessions import open_transport

ROOT = "/opt/tritonops"
DEPLOYMENT = "dep-daytwo"


@pytest.fixture(scope="module")
def inventory(lab, tmp_path_factory):
    return full_host_inventory(lab, tmp_path_factory.mktemp("daytwo") / "hosts.yml", DEPLOYMENT,
                               tritonops_http_port=18700, tritonops_grpc_port=18701, tritonops_metrics_port=18702)


@pytest.fixture(scope="module")
def clean(lab, inventory):
    yield from full_host_shell(lab, DEPLOYMENT)


def engine_args_on_the_host(clean, release: str) -> str:
    """The digest of the release's model.json as the host has it (sha256sum there), named like release.json names it."""
    path = "vllm_model/1/model.json"
    sha = clean(f"sha256sum {ROOT}/{DEPLOYMENT}/releases/{release}/model_repository/{path}").stdout.split()[0]
    return hashlib.sha256(f"{path}={sha}\n".encode()).hexdigest()[:12]


def test_releases_after_two_deploys_name_the_current_and_the_previous(capsys, inventory, clean):
    code, first = cli(capsys, "deploy", "-i", inventory)
    assert code == 0, [r["msg"] for r in first["results"] if r["status"] == "failed"]
    older = clean(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip().rsplit("/", 1)[-1]
    code, second = cli(capsys, "deploy", "-i", inventory, "-e", "tritonops_max_num_seqs=8")
    assert code == 0, [r["msg"] for r in second["results"] if r["status"] == "failed"]
    newer = clean(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip().rsplit("/", 1)[-1]
    assert newer != older

    code, listed = cli(capsys, "releases", "-i", inventory)
    (row,) = listed["results"]
    listing = row["payload"]
    assert code == 0 and row["status"] == "ok" and (listing["current"], listing["previous"]) == (newer, older)
    assert [(r["id"], r["role"], r["gate"]) for r in listing["releases"]] == \
        [(newer, "current", "passed"), (older, "previous", "passed")]
    image = clean(f"docker inspect --format '{{{{.Image}}}}' tritonops-{DEPLOYMENT}").stdout.strip()
    for release in listing["releases"]:
        assert release["who"] == f"{getpass.getuser()}@{socket.gethostname()}"
        assert release["image_id"] == image and release["models"] == ["vllm_model"]
        assert release["engine_args"] == engine_args_on_the_host(clean, release["id"])
    assert listing["releases"][0]["engine_args"] != listing["releases"][1]["engine_args"]  # max_num_seqs changed

    code, checked = cli(capsys, "rollback", "-i", inventory, "--check", "--diff")  # says what goes back, no change
    said = "".join(r["diff"] or "" for r in checked["results"])
    assert code == 0 and f"back from release {newer} to {older}: " in said and "max_num_seqs 8 -> " in said, said
    assert main(["rollback", "-i", inventory, "--check", "--diff"]) == 0  # and as a person reads it
    shown = capsys.readouterr().out
    assert f"back from release {newer} to {older}: " in shown and "ROLLBACK RECAP (check" in shown, shown
    assert clean(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip().endswith(newer)
    code, back = cli(capsys, "rollback", "-i", inventory)  # the previous `releases` named is where rollback goes
    assert code == 0, back["results"]
    code, after = cli(capsys, "releases", "-i", inventory)
    assert (after["results"][0]["payload"]["current"], after["results"][0]["payload"]["previous"]) == (older, None)


def test_lock_status_shows_another_runs_lock_and_release_frees_it_only_for_its_owner(capsys, lab, inventory, clean,
                                                                                      tmp_path):
    other = LockOwner(uuid.uuid4().hex, "alice", "ctl-7", 4242, "deploy",
                      time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    transport = open_transport(lab.connection(FULL_2080TI))
    try:
        assert acquire(transport, f"{ROOT}/{DEPLOYMENT}", other).acquired
    finally:
        transport.close()
    code, status = cli(capsys, "lock", "status", "-i", inventory)
    (row,) = status["results"]
    held = row["payload"]
    assert code == 0 and row["status"] == "ok"
    assert (held["held"], held["holder"], held["lock_id"], held["pid"], held["command"], held["since"]) == \
        (True, "alice@ctl-7", other.token, 4242, "deploy", other.since)
    assert not held["stale"] and not held["gone"] and held["age_s"] < 600

    audit = tmp_path / "audit.log"
    code, refused = cli(capsys, "lock", "release", "-i", inventory, "--force", "bob@ctl-7", "--audit-log", str(audit))
    assert code == 2 and refused["results"][0]["status"] == "failed"
    assert refused["results"][0]["msg"] == f"locked by alice@ctl-7 (lock id {other.token}), not bob@ctl-7: " \
                                           "nothing released"
    assert json.loads(clean(f"cat {ROOT}/{DEPLOYMENT}/lock").stdout)["token"] == other.token  # left alone

    code, freed = cli(capsys, "lock", "release", "-i", inventory, "--force", "alice@ctl-7", "--audit-log", str(audit))
    assert code == 0 and freed["results"][0]["status"] == "changed"
    assert clean(f"test -e {ROOT}/{DEPLOYMENT}/lock").returncode == 1
    code, free = cli(capsys, "lock", "status", "-i", inventory)
    assert code == 0 and free["results"][0]["payload"]["held"] is False

    phases = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(d["host.name"], d["tritonops"].get("status")) for d in phases if d["tritonops"]["action"] == "phase"] == \
        [("s1", "failed"), ("s1", "changed")]
    assert all(d["labels"]["deployment"] == DEPLOYMENT for d in phases)
