"""`tritonops stop` / `start` on the lab (issue #26): the test lab's full host (real Triton, the lab engine) behind
the door lab's balancer (Debian's HAProxy). Stop drains the replica on the balancer and stops its container: the
door then has no replica (503 no_replica) and the release is untouched; `status` reads the replica `stopped` (its
host ok, the door failed); start brings the same container back, ready before the balancer sends to it again; each
is in the audit log; a replica the release does not place, and a second stop, are said per host. Both commands run
in table mode, --check and for real (issue #41: the table crashed after the replica had stopped)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.lab.test_door_lab import door_inventory
from tests.support.balancer_lab import BALANCER
from tests.lab.test_serve_lab import cli, task
from tritonops.cli.main import main
from tritonops.lab.testing import FULL_2080TI

DEPLOYMENT = "dep-maint"
ROOT = "/opt/tritonops"
KEYS = "/etc/tritonops/dep-maint.keys"
DOOR_HTTP, DOOR_GRPC = 18880, 18881
CONTAINER = f"tritonops-{DEPLOYMENT}"


def on(state, host, command):
    return subprocess.run(state.ssh_argv(host, command), capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def deployed(lab, balancer, tmp_path_factory):  # noqa: F811
    wipe = f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={DEPLOYMENT}) 2>/dev/null; " \
           f"rm -rf {ROOT}/{DEPLOYMENT}"
    on(lab, FULL_2080TI, wipe)
    on(balancer, BALANCER, "kill $(cat /run/haproxy-tritonops.pid) 2>/dev/null; sleep 0.5; "
                           "rm -rf /etc/haproxy/tritonops /etc/haproxy/tritonops.prev /etc/tritonops")
    path = door_inventory(lab, balancer, tmp_path_factory.mktemp("maint") / "hosts.yml", DEPLOYMENT,
                          (18800, 18801, 18802), (DOOR_HTTP, DOOR_GRPC), KEYS,
                          tritonops_door_address=balancer.host(BALANCER).network_address)
    yield path
    on(lab, FULL_2080TI, wipe)


def door(balancer, key):  # noqa: F811
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"http://{balancer.host(BALANCER).network_address}:{DOOR_HTTP}/v2/models/vllm_model/generate",
        data=json.dumps({"text_input": "hello", "parameters": {"max_tokens": 4}}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def until(predicate, seconds: float = 30):
    import time

    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_stop_drains_and_stops_the_replica_and_start_brings_the_same_one_back(capsys, lab, balancer, deployed,
                                                                               tmp_path):  # noqa: F811
    code, report = cli(capsys, "deploy", "-i", str(deployed))
    assert code == 0, [r["msg"] for r in report["results"] if r["status"] == "failed"]
    key = on(balancer, BALANCER, f"cat {KEYS}").stdout.strip()
    until(lambda: door(balancer, key)[0] == 200)
    started_at = on(lab, FULL_2080TI, f"docker inspect --format '{{{{.Id}}}}' {CONTAINER}").stdout.strip()
    current = on(lab, FULL_2080TI, f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip().rsplit("/", 1)[-1]
    audit = tmp_path / "audit.log"

    def state() -> str:
        return on(lab, FULL_2080TI, f"docker inspect --format '{{{{.State.Status}}}}' {CONTAINER}").stdout.strip()

    code = main(["stop", "-i", str(deployed), "--check", "--audit-log", "none"])  # table mode, as a person runs it
    out = capsys.readouterr().out
    assert code == 0 and out.splitlines()[0].strip() == "STOP (check: nothing was changed)", out
    assert "running -> exited" in out and CONTAINER in out and "s1 changed: would have stopped replica 0" in out
    assert state() == "running"

    code = main(["stop", "-i", str(deployed), "--audit-log", str(audit)])
    out = capsys.readouterr().out
    assert code == 0 and out.splitlines()[0].strip() == "STOP", out
    row = next(line for line in out.splitlines() if line.startswith("│ s1 "))
    assert "│ changed " in row and current in row and "running -> exited" in row, out
    assert f"s1 changed: stopped replica 0 ({CONTAINER}) of release {current}" in out and "drained" in out
    assert state() == "exited"
    status, body = door(balancer, key)
    assert (status, body.get("reason")) == (503, "no_replica"), body
    assert on(lab, FULL_2080TI, f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip() == f"releases/{current}"

    # status: the replica stopped on purpose is `stopped`, its host ok; the door has no replica UP and fails (exit 2)
    code, seen = cli(capsys, "status", "-i", str(deployed))
    host, door_row = task(seen, "status"), task(seen, "door")
    assert (host["status"], host["payload"]["container"]) == ("ok", "stopped"), host
    assert host["msg"] == "stopped (tritonops stop or docker stop): `tritonops start --limit s1` starts it again"
    assert door_row["status"] == "failed" and code == 2
    assert main(["status", "-i", str(deployed)]) == 2
    out = capsys.readouterr().out
    assert "│ stopped " in next(line for line in out.splitlines() if line.startswith("│ s1 ")), out

    code, again = cli(capsys, "stop", "-i", str(deployed), "--audit-log", "none")
    assert code == 0 and again["results"][0]["status"] == "ok"
    assert again["results"][0]["msg"] == "replica 0 already exited", again["results"][0]
    assert again["results"][0]["payload"]["replicas"] == [
        {"index": 0, "container": CONTAINER, "before": "exited", "after": "exited"}]

    code, refused = cli(capsys, "start", "-i", str(deployed), "--replica", "3", "--audit-log", "none")
    assert code == 2 and "places no replica 3 (its replicas: 0)" in refused["results"][0]["msg"], refused

    code = main(["start", "-i", str(deployed), "--check", "--audit-log", "none"])
    out = capsys.readouterr().out
    assert code == 0 and out.splitlines()[0].strip() == "START (check: nothing was changed)", out
    assert "exited -> running" in out and state() == "exited"

    code = main(["start", "-i", str(deployed), "--audit-log", str(audit)])
    out = capsys.readouterr().out
    assert code == 0 and out.splitlines()[0].strip() == "START", out
    assert "exited -> running" in out and f"s1 changed: started replica 0 ({CONTAINER}) of release {current}" in out
    status, body = door(balancer, key)  # ready before the balancer sent to it: the first request is answered
    assert status == 200 and body["text_output"], body
    assert on(lab, FULL_2080TI, f"docker inspect --format '{{{{.Id}}}}' {CONTAINER}").stdout.strip() == started_at
    code, seen = cli(capsys, "status", "-i", str(deployed))
    assert code == 0 and task(seen, "status")["payload"]["container"] == "running", seen

    events = [json.loads(line) for line in audit.read_text().splitlines()]
    actions = [e.get("tritonops", {}).get("action") for e in events]
    assert actions.count("stop-started") == 1 and actions.count("start-started") == 1, actions
