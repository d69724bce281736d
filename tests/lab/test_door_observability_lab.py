"""Watching the front door on the lab (issue #31): one deploy of the door lab (test_door_lab.py's balancer and
inventory, imported as fixtures) with the test lab's Prometheus (`lab_prometheus`) given the targets file: the real
Prometheus scrapes the balancer's HAProxy exporter at the balancer's private address, the only one it listens on
(target up, with the deployment's backend and its replica); `tritonops.api.status(hosts=...)` reaches the replica
bound privately where its release says;
`tritonops status` shows the replica UP in both doors and `tritonops metrics` counts the door's requests and its
refusals (over gRPC: 200s, counted only together), both read over SSH from the balancer's HAProxy; the replica put in maint reads MAINT in status and the
lab Prometheus (its rules: tritonops' own, for: 3 s) fires DoorNoReplica for the deployment."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from tests.lab.test_door_lab import (DEPLOYMENT, DOOR_GRPC, FULL_2080TI, GENERATE, KEYS, MODEL,  # noqa: F401
                                     call, clean, inventory, lab_address, until_up)
from tests.support.balancer_lab import BALANCER
from tests.lab.test_serve_lab import cli, task
from tritonops.door.runtime import set_server_state
from tritonops.door.runtime_program import send_argv
from tritonops.lab import prometheus
from tritonops.render.door_config import http_backend
from tritonops.waiting import wait_until


@pytest.fixture(scope="module")
def observed(lab, balancer, inventory, clean, lab_prometheus):  # noqa: F811
    """The door lab's inventory with the lab Prometheus' targets file, the full host's address on the lab network
    for Prometheus to reach, and the balancer's private address (its lab-network one, as `tritonops lab up` writes
    it) where its exporter binds and is scraped; deployed once for the module."""
    path = Path(inventory).with_name("observed.yml")
    data = yaml.safe_load(Path(inventory).read_text())
    data["all"]["vars"]["tritonops_prometheus_file_sd"] = str(lab_prometheus.targets_file)
    data["all"]["hosts"]["s1"]["tritonops_metrics_address"] = lab_address(lab, FULL_2080TI)
    door = data["all"]["children"]["tritonops_balancers"]["hosts"]["door-1"]
    door["tritonops_bind_address"] = balancer.host(BALANCER).network_address  # its private address, as the lab's
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture(scope="module")
def deployed(capsys_module, observed, balancer, clean):  # noqa: F811
    code, report = capsys_module(observed)
    assert code == 0, [r["msg"] for r in report["results"] if r["status"] == "failed"]
    key = clean(f"cat {KEYS}").stdout.strip()
    until_up(balancer, key)
    return report, key


@pytest.fixture(scope="module")
def capsys_module():
    """`tritonops deploy -i INVENTORY --json` for a module fixture (capsys is per test): its exit code and result."""
    import contextlib
    import io

    from tritonops.cli.main import main

    def deploy(inventory_path):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["deploy", "-i", inventory_path, "--json"])
        return code, json.loads(out.getvalue())

    return deploy


def test_prometheus_scrapes_the_balancer_s_exporter_with_the_deployment_s_backend(deployed, balancer,
                                                                                   lab_prometheus):  # noqa: F811
    report, _ = deployed
    said = [r for r in report["results"] if r["task"] == "targets" and r["host"] == "door-1"]
    assert said and said[0]["status"] in ("changed", "ok"), said
    exporter = f"{balancer.host(BALANCER).network_address}:8405"
    groups = [g for g in json.loads(lab_prometheus.targets_file.read_text()) if g["labels"].get("host") == "door-1"]
    assert groups == [{"targets": [exporter], "labels": {"host": "door-1", "role": "balancer",
                                                         "deployment": DEPLOYMENT, "queue_timeout_ms": "2000"}}]

    def health():
        found = [t for t in prometheus.targets(lab_prometheus) if t["labels"].get("host") == "door-1"]
        return found[0]["health"] if found and found[0]["health"] == "up" else None

    assert wait_until(health, timeout_s=60, interval_s=1) == "up", prometheus.targets(lab_prometheus)
    backend = http_backend(DEPLOYMENT)

    def servers_up():
        found = prometheus.query(lab_prometheus, f'haproxy_backend_active_servers{{host="door-1", proxy="{backend}",'
                                                 f'role="balancer"}}')
        return found if found and float(found[0]["value"][1]) == 1 else None

    found = wait_until(servers_up, timeout_s=30, interval_s=1)
    assert found and found[0]["metric"]["deployment"] == DEPLOYMENT, found
    assert task(report, "door")["status"] == "changed"


def test_the_exporter_listens_on_the_balancer_s_private_address_only(deployed, balancer, clean):  # noqa: F811
    address = balancer.host(BALANCER).network_address
    # every socket listening on :8405 (0x20D5) on the balancer, IPv4 and IPv6, as the kernel lists them
    listing = clean("python3 -c \"import socket, struct\n"
                    "for name in ('tcp', 'tcp6'):\n"
                    "    for row in open('/proc/net/' + name).read().splitlines()[1:]:\n"
                    "        local, state = row.split()[1], row.split()[3]\n"
                    "        host, port = local.split(':')\n"
                    "        if port == '20D5' and state == '0A':\n"
                    "            raw = bytes.fromhex(host)\n"
                    "            print(socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, "
                    "b''.join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))))\"")
    assert listing.returncode == 0, listing.stderr
    assert set(listing.stdout.split()) == {address}, listing.stdout  # not 0.0.0.0, not ::, not loopback
    globals_file = clean("cat /etc/haproxy/tritonops/00-tritonops.cfg").stdout
    assert f"    bind {address}:8405\n" in globals_file and "bind *:8405" not in globals_file


def test_the_python_api_s_status_reaches_the_privately_bound_replica_from_its_release(deployed, observed):
    from tritonops import api

    data = yaml.safe_load(Path(observed).read_text())
    s1 = data["all"]["hosts"]["s1"]
    given = {name: s1[name] for name in ("ansible_host", "ansible_port", "tritonops_deployment")}
    # no balancer, no port and no bind address given: by the variables alone the replica would be asked on
    # 127.0.0.1:8000, where nothing answers; release.json says where it binds and on which ports
    results = api.status(hosts={"s1": given}, vars={name: data["all"]["vars"][name] for name in (
        "ansible_user", "ansible_ssh_private_key_file", "tritonops_known_hosts_file")})
    (row,) = list(results)
    assert row.status == "ok" and row.msg.startswith("serving"), row
    assert row.payload.ready and [m.name for m in row.payload.models] == [MODEL]


def test_status_shows_each_replica_up_in_both_doors_read_from_the_balancer_s_haproxy(capsys, deployed, observed):
    code, doc = cli(capsys, "status", "-i", observed)
    door = [r for r in doc["results"] if r["task"] == "door"]
    assert code == 0 and [r["host"] for r in door] == ["door-1"], doc["results"]
    servers = door[0]["payload"]["servers"]
    assert [(s["door"], s["server"], s["host"], s["replica"], s["state"]) for s in servers] == [
        ("http", "s1-r0", "s1", 0, "UP"), ("grpc", "s1-r0", "s1", 0, "UP")]
    assert door[0]["msg"] == f"{DEPLOYMENT}: 1/1 replicas UP"


def test_metrics_counts_the_door_s_requests_and_its_refusals_by_reason(capsys, deployed, observed, balancer,
                                                                         grpc_knocks):  # noqa: F811
    _, key = deployed
    assert call(balancer, f"/v2/models/{MODEL}/generate", key, GENERATE)[0] == 200
    assert call(balancer, f"/v2/models/{MODEL}/generate", None, GENERATE)[0] == 401
    assert call(balancer, "/v2/repository/index", key)[0] == 403
    code, doc = cli(capsys, "metrics", "-i", observed)
    door = [r for r in doc["results"] if r["task"] == "door"]
    assert code == 0 and [r["host"] for r in door] == ["door-1"], doc["results"]
    http = next(d for d in door[0]["payload"]["doors"] if d["door"] == "http")
    assert (http["refused_4xx"], http["refused_503"], http["queue_timeouts"], http["replica_5xx"]) == (2, 0, 0, 0)
    assert http["answered_2xx"] == http["requests"] - 2 >= 2  # the readiness knocks and the generate request
    assert (http["replicas_up"], http["replicas"]) == (1, 1)
    grpc = next(d for d in door[0]["payload"]["doors"] if d["door"] == "grpc")
    assert (grpc["requests"], grpc["refused"], grpc["answered_2xx"], grpc["refused_4xx"]) == (3, 2, 3, 0), grpc


@pytest.fixture(scope="module")
def grpc_knocks(deployed, balancer):  # noqa: F811
    """Through the gRPC door: one call with the key, one without (unauthorized), one not exposed."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    _, key = deployed
    client = grpcclient.InferenceServerClient(f"{balancer.host(BALANCER).network_address}:{DOOR_GRPC}")
    try:
        assert client.is_model_ready(MODEL, headers={"authorization": f"Bearer {key}"})
        for call_ in (lambda: client.is_model_ready(MODEL),
                      lambda: client.get_model_repository_index(headers={"authorization": f"Bearer {key}"})):
            with pytest.raises(InferenceServerException):
                call_()
    finally:
        client.close()


def test_a_replica_in_maint_reads_maint_in_status_and_fires_door_no_replica(capsys, deployed, observed, clean,
                                                                           balancer, lab_prometheus):  # noqa: F811
    _, key = deployed
    backend = http_backend(DEPLOYMENT)

    def state(value: str) -> None:
        done = clean(shlex.join(send_argv([set_server_state(backend, "s1-r0", value)])))
        assert done.returncode == 0, done.stderr

    def firing():
        return [a for a in prometheus.alerts(lab_prometheus) if a["labels"].get("alertname") == "DoorNoReplica"
                and a["state"] == "firing"] or None

    state("maint")
    try:
        code, doc = cli(capsys, "status", "-i", observed)
        (door,) = [r for r in doc["results"] if r["task"] == "door"]
        assert code == 2 and door["status"] == "failed", door
        assert [(s["door"], s["state"]) for s in door["payload"]["servers"]] == [("http", "MAINT"), ("grpc", "UP")]
        assert f"{DEPLOYMENT}: no replica UP, the door answers 503 no_replica" in door["msg"]
        alerts = wait_until(firing, timeout_s=60, interval_s=1)
        assert alerts and alerts[0]["labels"]["deployment"] == DEPLOYMENT, prometheus.alerts(lab_prometheus)
        assert alerts[0]["labels"]["host"] == "door-1" and alerts[0]["labels"]["proxy"] == backend
    finally:
        state("ready")
    until_up(balancer, key)
    assert wait_until(lambda: not firing(), timeout_s=60, interval_s=1)
