"""Log shipping on the test lab's full host, against a real collector (Debian's rsyslog on the lab
network, tritonops/lab/collector.py) and real Docker logging drivers:
- a deploy with `syslog` to the collector: the collector's file holds Triton's start-up lines, the
  lab engine's KV-cache line and the deploy's own events (the gate result), each with host,
  deployment, release and model fields; the controller's audit log holds the same events;
- the collector goes away while Triton runs: Triton keeps serving; a deploy then still succeeds and
  says shipping is degraded, and the new release serves;
- an unknown logging driver is refused before anything is touched, naming the allowed ones.
One deployment (`dep-logs`) with ports of its own.
"""

import json

import docker
import pytest
import yaml

from tests.lab.test_serve_lab import full_host_shell
from tritonops.cli.main import main
from tritonops.lab import collector as lab_collector
from tritonops.lab.defaults import default_cache_dir
from tritonops.lab.testing import FULL_2080TI
from tritonops.logs.shipping import DRIVERS

pytestmark = pytest.mark.lab

ROOT = "/opt/tritonops"
DEPLOYMENT = "dep-logs"
HOST = "s1"


@pytest.fixture(scope="module")
def collector(lab):
    found = lab_collector.lab_collector(lab.state_dir, lab.prefix)
    client = docker.from_env()
    lab_collector.up(client, found, default_cache_dir(), lab.state_dir / "collector-build.log")
    found.received_file.write_text("")  # only this module's messages
    yield found
    lab_collector.down(client, found)


@pytest.fixture(scope="module")
def inventory(lab, collector, tmp_path_factory):
    lab_vars = yaml.safe_load(lab.inventory_file.read_text())
    full = lab_vars["all"]["children"]["lab"]["children"]["lab_full"]
    host = lab.host(FULL_2080TI)
    data = {"all": {
        "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(lab.key_file),
                 "tritonops_known_hosts_file": str(lab.known_hosts_file), **full["vars"],
                 "tritonops_build_host": HOST},
        "hosts": {HOST: {"ansible_host": host.address, "ansible_port": host.port, "tritonops_deployment": DEPLOYMENT,
                         "tritonops_model": full["hosts"][FULL_2080TI].get("tritonops_model")
                         or full["vars"]["tritonops_model"],
                         "tritonops_http_port": 18400, "tritonops_grpc_port": 18401, "tritonops_metrics_port": 18402,
                         "tritonops_log_driver": "syslog", "tritonops_log_collector": collector.address}},
    }}
    path = tmp_path_factory.mktemp("logs") / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture(scope="module")
def on_host(lab, inventory):
    yield from full_host_shell(lab, DEPLOYMENT, timeout=120)


def deploy(capsys, *argv):
    code = main(["deploy", *argv, "--json"])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out.strip() else None), captured.err


def answers(on_host) -> str:
    out = on_host("curl -s -X POST localhost:18400/v2/models/vllm_model/generate "
                  "-d '{\"text_input\": \"hello\", \"parameters\": {\"max_tokens\": 3}}'").stdout
    return json.loads(out)["text_output"]


def current(on_host) -> str:
    return on_host(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip().rsplit("/", 1)[-1]


def test_triton_lines_and_deploy_events_reach_the_collector_tagged(capsys, collector, inventory, on_host, tmp_path):
    audit = tmp_path / "audit.log"
    code, report, err = deploy(capsys, "-i", inventory, "--audit-log", str(audit))
    assert code == 0, (err, [r["msg"] for r in (report or {}).get("results", []) if r["status"] == "failed"])
    release = current(on_host)
    docs = [e["doc"] for e in lab_collector.received(collector) if e["doc"] and e["doc"]["host.name"] == HOST]
    assert docs, lab_collector.received(collector)[:5]
    for doc in docs:
        assert doc["labels"] == {"deployment": DEPLOYMENT, "release": release, "model": "vllm_model"}, doc
    messages = {(d["service.name"], d["message"]) for d in docs}
    assert ("triton", "successfully loaded 'vllm_model'") in messages
    assert any(src == "triton" and m.startswith("Started HTTPService") for src, m in messages)
    assert any(src == "vllm" and "# cuda blocks:" in m for src, m in messages)  # the 2080 Ti runs the V0 engine
    gate = [d for d in docs if d["service.name"] == "tritonops" and d.get("tritonops", {}).get("action") == "gate"]
    assert gate and gate[0]["tritonops"]["status"] == "passed" and "gate passed" in gate[0]["message"]
    audited = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [d["message"] for d in audited] == [d["message"] for d in docs if d["service.name"] == "tritonops"]


def test_with_the_collector_gone_triton_keeps_serving_and_a_deploy_says_shipping_is_degraded(
        capsys, collector, inventory, on_host):
    client = docker.from_env()
    assert lab_collector.stop(client, collector)
    try:
        assert answers(on_host)  # Triton runs on; its driver buffers and drops, never blocks
        before = current(on_host)
        code, report, err = deploy(capsys, "-i", inventory, "-e", "tritonops_max_num_seqs=16")
        assert code == 0, err
        serve = next(r for r in report["results"] if r["task"].startswith("Triton serves"))
        assert serve["status"] == "changed" and "log shipping degraded: syslog to " + collector.address in serve["msg"]
        events = next(r for r in report["results"] if r["task"] == "events")
        assert events["status"] == "ok" and events["msg"].startswith("log shipping degraded: deploy events not shipped")
        assert current(on_host) != before and answers(on_host)
        driver = on_host(f"docker inspect -f '{{{{.HostConfig.LogConfig.Type}}}}' tritonops-{DEPLOYMENT}").stdout
        assert driver.strip() == "json-file"  # the fallback: the host's rotated local logs
        assert main(["status", "-i", inventory, "--json"]) in (0, 2)
        (state,) = json.loads(capsys.readouterr().out)["results"]
        assert state["payload"]["logs"].startswith("json-file (shipping degraded: syslog " + collector.address)
        code, again, _ = deploy(capsys, "-i", inventory, "-e", "tritonops_max_num_seqs=16")
        assert code == 0 and next(r for r in again["results"] if r["task"].startswith("Triton serves"))["status"] == "ok"
    finally:
        lab_collector.start(client, collector)


def test_an_unknown_logging_driver_is_refused_before_anything_is_touched(capsys, inventory, on_host):
    before = current(on_host)
    code, report, err = deploy(capsys, "-i", inventory, "-e", "tritonops_log_driver=splunk")
    assert code != 0 and report is None
    assert "tritonops_log_driver 'splunk' is not one tritonops ships with; allowed: " + ", ".join(DRIVERS) in err
    assert len(err.strip().splitlines()) == 1 and current(on_host) == before


def test_logs_prints_each_hosts_lines_and_follows_new_ones(capsys, lab, inventory, on_host, tmp_path):
    from tritonops.cli.cmd_deploy import default_playbook, default_roles_path
    from tritonops.playbook import load_run_inputs
    from tritonops.reading.sessions import ReadOptions
    from tritonops.lab.testing import LIGHT_H200X2
    from tritonops.reading.logs import read_logs

    assert deploy(capsys, "-i", inventory)[0] == 0  # serving (a no-op after the tests above)
    code = main(["logs", "-i", inventory, "--tail", "5"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and len(out) == 5 and all(line.startswith(f"{HOST} | 20") for line in out), out
    assert any(" info  triton    Started" in line for line in out)

    # a host without Docker: its one-line problem, the others print
    data = yaml.safe_load(open(inventory).read())
    light = lab.host(LIGHT_H200X2)
    data["all"]["hosts"]["nodocker"] = {"ansible_host": light.address, "ansible_port": light.port}
    both = tmp_path / "both.yml"
    both.write_text(yaml.safe_dump(data))
    code = main(["logs", "-i", str(both), "--tail", "2"])
    out = capsys.readouterr().out.splitlines()
    assert code == 2 and sum(line.startswith(f"{HOST} ") for line in out) == 2
    (problem,) = [line for line in out if line.startswith("nodocker")]
    assert "failed: " in problem

    playbook = default_playbook("deploy.yml")
    inputs = load_run_inputs(playbook, [inventory], roles_path=default_roles_path(playbook))
    rounds = []

    def between(_seconds):  # the engine logs an error line for this request
        on_host("curl -s -X POST localhost:18400/v2/models/vllm_model/generate "
                "-d '{\"text_input\": \"__lab_engine_error__\", \"parameters\": {\"max_tokens\": 2}}'")

    for results in read_logs(inputs, ReadOptions(), tail=1, since=None, follow=True, stop=lambda: len(rounds) >= 3,
                             sleep=between):
        rounds.append([line.text for line in results[HOST].payload] if results[HOST].ok else results[HOST].msg)
    assert len(rounds[0]) == 1
    later = [text for texts in rounds[1:] for text in texts]
    assert len([t for t in later if "injected failure" in t]) == 2, rounds  # each new line once
