"""Replicas on a real lab host (issue #22): the test lab's full host given four simulated A100s on NVLink for this
module (its GPU profile rewritten; the lab's container hook shows each Triton container only its own GPU), one
deployment (`dep-replicas`) with `tritonops_replicas: auto` (one per GPU):
- the four replicas serve, each on its own GPU and ports, recorded in the release, and `status` reads them;
- a deploy that changes an engine argument rolls them one at a time while generate requests to all four keep
  being answered by the others;
- the last replica killed during its gate brings the host back: every replica on the previous release,
  `current` unmoved;
- scaling 4 -> 2 -> 4, and a rollback to the two-replica release serving on two replicas again.
"""

import json
import shlex
import time

import pytest

from tests.lab.test_serve_lab import cli, full_host_inventory, full_host_shell, task
from tritonops.lab import containers as ct
from tritonops.lab import engine
from tritonops.lab.profile_file import render_profile
from tritonops.lab.profiles import PROFILES
from tritonops.lab.testing import FULL_2080TI

pytestmark = pytest.mark.lab

ROOT = "/opt/tritonops"
DEPLOYMENT = "dep-replicas"
PORTS = (19000, 19010, 19020, 19030)
CONTAINERS = (f"tritonops-{DEPLOYMENT}", *(f"tritonops-{DEPLOYMENT}-{i}" for i in (1, 2, 3)))
LAST = CONTAINERS[-1]

# sends a generate request every 0.1 s to each replica in turn until killed; a line per request: time port ok
TRAFFIC = r"""
import json, sys, time, urllib.request
ports, out = [int(p) for p in sys.argv[1].split(",")], open(sys.argv[2], "a", buffering=1)
body = json.dumps({"text_input": "hi", "parameters": {"max_tokens": 2}}).encode()
i = 0
while True:
    port = ports[i % len(ports)]
    i += 1
    try:
        with urllib.request.urlopen(urllib.request.Request(
                "http://127.0.0.1:%d/v2/models/vllm_model/generate" % port, data=body), timeout=10) as r:
            ok = bool(json.loads(r.read()).get("text_output"))
    except Exception:
        ok = False
    out.write("%f %d %d\n" % (time.time(), port, ok))
    time.sleep(0.1)
"""


def _put_profile(lab, profile: str) -> None:
    host = lab.host(FULL_2080TI)
    container = engine.existing_client().containers.get(host.container)
    ct.put_profile(container, render_profile(PROFILES[profile], host.name))


@pytest.fixture(scope="module")
def four_gpus(lab):
    _put_profile(lab, "a100x4")
    yield
    _put_profile(lab, "2080ti")


@pytest.fixture(scope="module")
def inventory(lab, four_gpus, tmp_path_factory):
    return full_host_inventory(lab, tmp_path_factory.mktemp("replicas") / "hosts.yml", DEPLOYMENT,
                               tritonops_replicas="auto", tritonops_http_port=PORTS[0], tritonops_grpc_port=19001,
                               tritonops_metrics_port=19002)


@pytest.fixture(scope="module")
def host(lab, inventory):
    yield from full_host_shell(lab, DEPLOYMENT, timeout=120)


def answers(host, port: int) -> bool:
    out = host(f"curl -s -m 10 -X POST localhost:{port}/v2/models/vllm_model/generate "
               "-d '{\"text_input\": \"hello\", \"parameters\": {\"max_tokens\": 4}}'").stdout
    try:
        return bool(json.loads(out).get("text_output"))
    except ValueError:
        return False


def current(host) -> str:
    return host(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip()


def running(host) -> dict:
    """name -> (release, GPUs asked for) of the deployment's running containers."""
    names = host(f"docker ps --filter label=tritonops.deployment={DEPLOYMENT} --format '{{{{.Names}}}}'").stdout.split()
    found = {}
    for name in names:
        release, devices = host("docker inspect --format '{{index .Config.Labels \"tritonops.release\"}} "
                                "{{range .HostConfig.DeviceRequests}}{{.DeviceIDs}}{{end}}' " + name).stdout.split(" ", 1)
        found[name] = (release, devices.strip())
    return found


def test_every_replica_serves_on_its_own_gpu_and_status_reads_them(capsys, inventory, host):
    code, report = cli(capsys, "deploy", "-i", inventory)
    assert code == 0, [r["msg"] for r in report["results"] if r["status"] == "failed"]
    assert task(report, "Triton serves")["status"] == "changed"
    release = current(host).removeprefix("releases/")
    assert running(host) == {name: (release, f"[{i}]") for i, name in enumerate(CONTAINERS)}
    assert all(answers(host, port) for port in PORTS)
    recorded = json.loads(host(f"cat {ROOT}/{DEPLOYMENT}/current/release.json").stdout)
    assert recorded["serve"]["replicas"] == [{"index": i, "gpus": [i], "ports": [19000 + 10 * i, 19001 + 10 * i,
                                                                                 19002 + 10 * i]} for i in range(4)]
    assert [g.get("replica") for g in recorded["gates"]] == [0, 1, 2, 3] and all(g["passed"] for g in recorded["gates"])
    code, state = cli(capsys, "status", "-i", inventory)
    (result,) = state["results"]
    assert code == 0 and result["msg"] == "serving: 4 replicas ready", result
    assert [(r["index"], r["container"], r["ready"]) for r in result["payload"]["replicas"]] == \
        [(i, "running", True) for i in range(4)]
    def lives():  # each replica's start time and Docker's restart count: a no-op must leave both as they are
        return {name: host(f"docker inspect --format '{{{{.State.StartedAt}}}} {{{{.RestartCount}}}}' {name}")
                .stdout.strip() for name in CONTAINERS}

    before = lives()
    code, again = cli(capsys, "deploy", "-i", inventory)
    assert code == 0 and task(again, "Triton serves")["status"] == "ok"  # a no-op with replicas restarts nothing
    assert lives() == before and all(before.values()), before


def test_a_changed_engine_argument_rolls_one_replica_at_a_time_while_the_other_answers(capsys, inventory, host):
    code, _ = cli(capsys, "deploy", "-i", inventory)
    assert code == 0
    before = current(host)
    log = f"/tmp/{DEPLOYMENT}-traffic.log"
    host(f"rm -f {log}; nohup python3 -c '{TRAFFIC}' {','.join(map(str, PORTS))} {log} >/dev/null 2>&1 & "
         f"echo $! > {log}.pid")
    try:
        time.sleep(2)
        code, report = cli(capsys, "deploy", "-i", inventory, "-e", "tritonops_max_num_seqs=8")
        time.sleep(2)
    finally:
        host(f"kill $(cat {log}.pid)")
    assert code == 0 and task(report, "Triton serves")["status"] == "changed", task(report, "Triton serves")
    assert current(host) != before
    lines = [line.split() for line in host(f"cat {log}").stdout.splitlines()]
    samples = [(float(t), int(p), ok == "1") for t, p, ok in lines]
    failed = [(t, p) for t, p, ok in samples if not ok]
    answered = {port: sum(ok for _, p, ok in samples if p == port) for port in PORTS}
    assert all(answered.values()) and failed, (answered, len(samples))  # each answered; restarts were seen
    assert {p for _, p in failed} == set(PORTS)  # every replica restarted, one at a time:
    for t, port in failed:  # whenever one replica did not answer, another one did within a second
        assert any(ok and p != port and abs(s - t) <= 1.0 for s, p, ok in samples), (t, port)


def test_the_last_replica_killed_in_its_gate_brings_every_replica_back(capsys, inventory, host):
    code, _ = cli(capsys, "deploy", "-i", inventory)
    assert code == 0
    before = current(host)
    old = before.removeprefix("releases/")
    # kills the last replica's container as soon as it runs another release than `old` (the new one, in its gate)
    watcher = (f"for i in $(seq 900); do r=$(docker inspect --format '{{{{.State.Running}}}} "
               f"{{{{index .Config.Labels \"tritonops.release\"}}}}' {LAST} 2>/dev/null); "
               f"case \"$r\" in 'true {old}'|'') ;; true*) docker kill {LAST}; exit 0;; esac; sleep 0.2; done")
    host(f"nohup sh -c {shlex.quote(watcher)} >/dev/null 2>&1 &")
    code, report = cli(capsys, "deploy", "-i", inventory, "-e", "tritonops_max_num_seqs=6")
    serve = task(report, "Triton serves")
    assert code == 2 and serve["status"] == "failed" and serve["msg"].startswith("rolled back: "), serve
    assert current(host) == before  # not switched
    assert {name: release for name, (release, _) in running(host).items()} == {name: old for name in CONTAINERS}
    assert all(answers(host, port) for port in PORTS)


def test_scaling_four_to_two_to_four_and_a_rollback_restores_the_releases_placement(capsys, inventory, host):
    code, report = cli(capsys, "deploy", "-i", inventory, "-e", "tritonops_replicas=2")
    assert code == 0, [r["msg"] for r in report["results"] if r["status"] == "failed"]
    two = current(host).removeprefix("releases/")
    assert running(host) == {CONTAINERS[0]: (two, "[0]"), CONTAINERS[1]: (two, "[1]")}  # 2 and 3 retired
    assert all(answers(host, port) for port in PORTS[:2])
    code, state = cli(capsys, "status", "-i", inventory)
    assert code == 0 and state["results"][0]["msg"] == "serving: 2 replicas ready"
    code, report = cli(capsys, "deploy", "-i", inventory)
    assert code == 0 and sorted(running(host)) == sorted(CONTAINERS)
    assert all(answers(host, port) for port in PORTS)
    code, back = cli(capsys, "rollback", "-i", inventory, "--to", two)  # two replicas, from its release.json
    assert code == 0, back["results"]
    assert running(host) == {CONTAINERS[0]: (two, "[0]"), CONTAINERS[1]: (two, "[1]")}
    assert all(answers(host, port) for port in PORTS[:2])
