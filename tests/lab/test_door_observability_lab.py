"""Watching the front door on the lab (issue #31): one deploy of the door lab (test_door_lab.py's balancer and
inventory, imported as fixtures) with the test lab's Prometheus (`lab_prometheus`) given the targets file: the real
Prometheus scrapes the balancer's HAProxy exporter (target up, with the deployment's backend and its replica)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.lab.test_door_lab import (BALANCER, DEPLOYMENT, FULL_2080TI, KEYS, balancer, clean, inventory,  # noqa: F401
                                     lab_address, until_up)
from tests.lab.test_serve_lab import cli, task
from tritonops.lab import prometheus
from tritonops.render.haproxy_config import http_backend
from tritonops.waiting import wait_until


@pytest.fixture(scope="module")
def observed(lab, balancer, inventory, clean, lab_prometheus):  # noqa: F811
    """The door lab's inventory with the lab Prometheus' targets file, and each host's address on the lab
    network for Prometheus to reach (the balancer's too); deployed once for the module."""
    path = Path(inventory).with_name("observed.yml")
    data = yaml.safe_load(Path(inventory).read_text())
    data["all"]["vars"]["tritonops_prometheus_file_sd"] = str(lab_prometheus.targets_file)
    data["all"]["hosts"]["s1"]["tritonops_metrics_address"] = lab_address(lab, FULL_2080TI)
    door = data["all"]["children"]["tritonops_balancers"]["hosts"]["door-1"]
    door["tritonops_metrics_address"] = balancer.host(BALANCER).network_address
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
