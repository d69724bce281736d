"""Metrics on real lab hosts: `deploy` writes the Prometheus targets file (not in --check; unchanged
by a no-op redeploy; a rejected release that is rolled back leaves the serving one listed), the lab's real Prometheus
(Debian's package, tests/lab/conftest.py `lab_prometheus`) loads it with tritonops' rules and scrapes
the host's Triton; request counts reach it; stopping the host's Triton fires TritonDown; `tritonops
metrics` prints the figures read through SSH, and a host whose metrics port answers garbage or is
closed is that host's one-line problem while the others still print.

One deployment (`dep-metrics`, ports 19000-19002) on the test lab's full host (`m-serve`); the two
light hosts stand in for a port answering garbage (`m-garbage`: a tiny HTTP server of this test) and a
closed one (`m-closed`).
"""

import json
import subprocess

import jsonschema
import pytest
import yaml

from tests.support.result_schema import SCHEMA as RESULT_SCHEMA
from tritonops.cli.main import main
from tritonops.lab import prometheus
from tritonops.lab.containers import network_name
from tritonops.lab.testing import FULL_2080TI, LIGHT_H200X2, LIGHT_NOGPU
from tritonops.metrics.targets import merged_groups, read_targets, render_targets
from tritonops.waiting import wait_until

pytestmark = pytest.mark.lab

DEPLOYMENT = "dep-metrics"
CONTAINER = f"tritonops-{DEPLOYMENT}"
PORTS = {"tritonops_http_port": 19000, "tritonops_grpc_port": 19001, "tritonops_metrics_port": 19002}
HOSTS = {"m-serve": FULL_2080TI, "m-garbage": LIGHT_H200X2, "m-closed": LIGHT_NOGPU}
GARBAGE_SERVER = r'''
import http.server, sys
class Garbage(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"<html><body>this is not a metrics page</body></html>\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("0.0.0.0", int(sys.argv[1])), Garbage).serve_forever()
'''


@pytest.fixture(scope="module")
def inventory(lab, lab_prometheus, tmp_path_factory):
    lab_vars = yaml.safe_load(lab.inventory_file.read_text())
    full = lab_vars["all"]["children"]["lab"]["children"]["lab_full"]
    full_vars = dict(full["vars"])
    full_vars["tritonops_build_host"] = "m-serve"
    hosts = {}
    for name, lab_name in HOSTS.items():
        host = lab.host(lab_name)
        hosts[name] = {"ansible_host": host.address, "ansible_port": host.port, **PORTS,
                       "tritonops_metrics_address": prometheus.container_address(host.container,
                                                                                 network_name(lab.prefix))}
    hosts["m-serve"]["tritonops_model"] = full["hosts"][FULL_2080TI].get("tritonops_model") or \
        full_vars["tritonops_model"]
    data = {"all": {"vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(lab.key_file),
                             "tritonops_known_hosts_file": str(lab.known_hosts_file), **full_vars,
                             "tritonops_deployment": DEPLOYMENT,
                             "tritonops_prometheus_file_sd": str(lab_prometheus.targets_file)},
                    "hosts": hosts}}
    path = tmp_path_factory.mktemp("metrics") / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture(scope="module")
def on_host(lab):
    def run(name: str, command: str, check: bool = True) -> str:
        proc = subprocess.run(lab.ssh_argv(HOSTS[name], command), capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 or not check, f"{name}: {command}: {proc.stdout} {proc.stderr}"
        return proc.stdout
    return run


@pytest.fixture(scope="module")
def serving(on_host, lab_prometheus):
    remove = (f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={DEPLOYMENT}) 2>/dev/null; "
              f"rm -rf /opt/tritonops/{DEPLOYMENT}")
    on_host("m-serve", remove, check=False)
    yield
    on_host("m-serve", remove, check=False)
    path = lab_prometheus.targets_file  # the deployment is gone: so is its target (the lab's Prometheus stays up)
    path.write_text(render_targets(merged_groups(read_targets(path.read_text(), str(path)),
                                                 [(DEPLOYMENT, "m-serve")], [])))


@pytest.fixture(scope="module")
def garbage_port(on_host):
    pid = on_host("m-garbage", "setsid python3 -c '" + GARBAGE_SERVER.replace("'", "'\\''")
                  + "' 19002 >/dev/null 2>&1 < /dev/null & echo $!").strip()
    yield
    on_host("m-garbage", f"kill {int(pid)}", check=False)


def cli(capsys, *argv):
    code = main([*argv, "--json"])
    found = json.loads(capsys.readouterr().out)
    jsonschema.validate(found, RESULT_SCHEMA)  # every command's one result document, real payloads
    return code, found


def generate(on_host) -> str:
    out = on_host("m-serve", "curl -s -X POST localhost:19000/v2/models/vllm_model/generate "
                             "-d '{\"text_input\": \"hello\", \"parameters\": {\"max_tokens\": 4}}'")
    return json.loads(out)["text_output"]


def requests_seen(lab_prometheus) -> float | None:
    found = prometheus.query(lab_prometheus, f'sum(nv_inference_request_success{{host="m-serve",'
                                             f'deployment="{DEPLOYMENT}"}})')
    return float(found[0]["value"][1]) if found else None


def target_health(lab_prometheus) -> str | None:
    for target in prometheus.targets(lab_prometheus):
        if target["labels"].get("host") == "m-serve" and target["labels"].get("deployment") == DEPLOYMENT:
            return target["health"]
    return None


def firing(lab_prometheus, alertname: str) -> list[dict]:
    return [alert for alert in prometheus.alerts(lab_prometheus) if alert["state"] == "firing"
            and alert["labels"].get("alertname") == alertname and alert["labels"].get("host") == "m-serve"
            and alert["labels"].get("deployment") == DEPLOYMENT]


def test_deploy_writes_targets_prometheus_scrapes_them_metrics_prints_and_a_stopped_triton_fires(
        capsys, lab, inventory, lab_prometheus, on_host, serving, garbage_port):
    def ours():
        return [g for g in json.loads(lab_prometheus.targets_file.read_text()) if g["labels"]["deployment"] == DEPLOYMENT]

    code, checked = cli(capsys, "deploy", "-i", inventory, "--limit", "m-serve", "--check")
    assert code == 0 and ours() == [] and not [r for r in checked["results"] if r["task"] == "targets"]
    code, report = cli(capsys, "deploy", "-i", inventory, "--limit", "m-serve")
    assert code == 0, [r["msg"] for r in report["results"] if r["status"] == "failed"]
    assert [r["status"] for r in report["results"] if r["task"] == "targets"] == ["changed"]
    current = on_host("m-serve", f"readlink /opt/tritonops/{DEPLOYMENT}/current").strip().removeprefix("releases/")
    address = prometheus.container_address(lab.host(FULL_2080TI).container, network_name(lab.prefix))

    # the targets file: this host, where Prometheus reaches it, what it serves; the rules beside it
    written = [{"targets": [f"{address}:19002"], "labels": {
        "host": "m-serve", "deployment": DEPLOYMENT, "release": current, "models": "vllm_model",
        "gpu_type": "NVIDIA GeForce RTX 2080 Ti", "gpus": "1"}}]
    assert ours() == written
    code, again = cli(capsys, "deploy", "-i", inventory, "--limit", "m-serve")  # a no-op: the file stays
    assert code == 0 and [r["status"] for r in again["results"] if r["task"] == "targets"] == ["ok"]
    assert ours() == written
    code, rejected = cli(capsys, "deploy", "-i", inventory, "--limit", "m-serve", "-e", json.dumps(
        {"tritonops_engine_args": {"no_such_engine_arg": 1}, "tritonops_engine_args_unchecked": ["no_such_engine_arg"]}))
    serve = next(r for r in rejected["results"] if r["task"].startswith("Triton serves"))
    assert code == 2 and serve["msg"].startswith("rolled back"), serve
    assert ours() == written  # the release that serves after the rollback, not the rejected one
    rules = lab_prometheus.targets_file.parent / "tritonops.rules.yml"
    assert subprocess.run(["promtool", "check", "rules", str(rules)], capture_output=True).returncode == 0

    # Prometheus finds the target up and counts the requests
    assert wait_until(lambda: target_health(lab_prometheus) == "up", timeout_s=60, interval_s=1), \
        prometheus.targets(lab_prometheus)
    before = wait_until(lambda: requests_seen(lab_prometheus), timeout_s=30, interval_s=1)  # the gate's request
    assert before >= 1
    for _ in range(3):
        assert generate(on_host)
    assert wait_until(lambda: (requests_seen(lab_prometheus) or 0) >= before + 3, timeout_s=30, interval_s=1)

    # tritonops metrics: the serving host's figures, the other two hosts' problems, one line each
    code, found = cli(capsys, "metrics", "-i", inventory)
    by_host = {h["host"]: h for h in found["results"]}
    assert code == 2 and set(by_host) == set(HOSTS)
    (model,) = by_host["m-serve"]["payload"]["models"]
    assert by_host["m-serve"]["status"] == "ok" and model["model"] == "vllm_model"
    assert model["requests"] >= before + 3 and model["failures"] == 0
    assert model["average_ms"]["request"] > 0 and set(model["average_ms"]) == {
        "request", "queue", "compute_input", "compute_infer", "compute_output"}
    assert by_host["m-serve"]["payload"]["engine_metrics"] and model["running"] == 0 and model["waiting"] == 0
    assert by_host["m-garbage"]["status"] == "failed" and by_host["m-garbage"]["msg"].startswith(
        "metrics port 19002 answered something else: not Prometheus text: line 1")
    closed = by_host["m-closed"]
    assert (closed["status"], closed["payload"], closed["msg"]) == (
        "failed", None, "metrics port 19002 closed (connection refused)")

    # the host's Triton stops: Prometheus fires TritonDown for it; metrics says the port is closed
    on_host("m-serve", f"docker stop -t 5 {CONTAINER}")
    try:
        alerts = wait_until(lambda: firing(lab_prometheus, "TritonDown"), timeout_s=60, interval_s=1)
        assert alerts and alerts[0]["labels"]["release"] == current, prometheus.alerts(lab_prometheus)
        code, found = cli(capsys, "metrics", "-i", inventory, "--limit", "m-serve")
        assert code == 2 and found["results"][0]["msg"] == "metrics port 19002 closed (connection refused)"
    finally:
        on_host("m-serve", f"docker start {CONTAINER}")
    assert wait_until(lambda: target_health(lab_prometheus) == "up", timeout_s=120, interval_s=1)
    assert wait_until(lambda: not firing(lab_prometheus, "TritonDown"), timeout_s=30, interval_s=1)
