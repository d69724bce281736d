"""The targets file on the controller: replaced whole (never half-written), unchanged when nothing
changed, and a file that is not file_sd left alone with an error naming it."""

import os

import pytest

from tritonops.deploy.targets import _replace
from tritonops.errors import InputError
from tritonops.metrics.targets import HostTarget, merged_groups, read_targets, render_targets


def update(path, targets, replaced):
    return _replace(str(path), lambda text: render_targets(merged_groups(read_targets(text, str(path)), replaced,
                                                                         targets)))


def test_written_once_then_unchanged_and_other_hosts_kept(tmp_path):
    path = tmp_path / "sd" / "targets.json"
    a = HostTarget("a", "10.0.0.1", 8002, "prod", "r1", ("m",), "NVIDIA H200", 8)
    b = HostTarget("b", "10.0.0.2", 8002, "prod", "r1", ("m",), "NVIDIA H200", 8)
    assert update(path, [a, b], [("prod", "a"), ("prod", "b")]) is True
    first = path.stat().st_mtime_ns, path.read_text()
    assert update(path, [a, b], [("prod", "a"), ("prod", "b")]) is False
    assert (path.stat().st_mtime_ns, path.read_text()) == first
    newer = HostTarget("a", "10.0.0.1", 8002, "prod", "r2", ("m",), "NVIDIA H200", 8)
    assert update(path, [newer], [("prod", "a")]) is True  # a deploy --limit a
    assert [g["labels"]["release"] for g in read_targets(path.read_text(), str(path))] == ["r2", "r1"]
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert sorted(os.listdir(path.parent)) == ["targets.json", "targets.json.lock"]  # no partial left


def test_a_file_that_is_not_file_sd_is_left_as_it_was(tmp_path):
    path = tmp_path / "targets.json"
    path.write_text("scrape_configs: []\n")
    with pytest.raises(InputError, match=f"^{path}: not a Prometheus file_sd JSON file"):
        update(path, [], [])
    assert path.read_text() == "scrape_configs: []\n"


INVENTORY = """all:
  vars: {{tritonops_deployment: chat}}
  children:
    gpu:
      hosts:
        node-a: {{ansible_host: 10.0.0.11}}
    tritonops_balancers:
      hosts:
        door-1:
          ansible_host: 10.0.0.2
          tritonops_prometheus_file_sd: {path}
          tritonops_queue_timeout_ms: {timeout}
        door-2:
          ansible_host: 10.0.0.3
          tritonops_metrics_address: 172.19.0.3
          tritonops_prometheus_file_sd: {path}
"""


def run_targets(tmp_path, timeout="500"):
    from tritonops.deploy.run import DeployReport
    from tritonops.deploy.targets import write_targets
    from tritonops.inventory import load_inventory
    from tritonops.planning.door import balancers_among, serving_hosts
    from tritonops.transport.sessions import SessionPool

    path = tmp_path / "sd" / "targets.json"
    (tmp_path / "hosts.yml").write_text(INVENTORY.format(path=path, timeout=timeout))
    hosts = load_inventory([str(tmp_path / "hosts.yml")]).select(None)
    results = []
    with SessionPool([]) as pool:  # node-a has no targets file: nothing is read over SSH
        write_targets(pool, serving_hosts(hosts), DeployReport(), results.append, balancers_among(hosts))
    return path, results


def test_each_balancer_s_exporter_joins_the_targets_file_labelled_with_the_run_s_deployments(tmp_path):
    path, results = run_targets(tmp_path)
    assert read_targets(path.read_text(), str(path)) == [
        {"targets": ["10.0.0.2:8405"],
         "labels": {"deployment": "chat", "host": "door-1", "queue_timeout_ms": "500", "role": "balancer"}},
        {"targets": ["172.19.0.3:8405"],  # tritonops_metrics_address, as for a Triton host
         "labels": {"deployment": "chat", "host": "door-2", "queue_timeout_ms": "2000", "role": "balancer"}}]
    assert [(r.host, r.task, r.status, r.msg) for r in results] == [
        ("door-1", "targets", "changed", f"10.0.0.2:8405 (HAProxy's exporter, chat) in {path}"),
        ("door-2", "targets", "changed", f"172.19.0.3:8405 (HAProxy's exporter, chat) in {path}")]
    import yaml

    door = yaml.safe_load((path.parent / "tritonops.rules.yml").read_text())["groups"][1]["rules"]
    assert [r["labels"].get("queue_timeout_ms") for r in door if r["alert"] == "DoorQueueTimeHigh"] == ["500", "2000"]
    assert [r.status for r in run_targets(tmp_path)[1]] == ["ok", "ok"]  # a second run: unchanged


def test_a_balancer_with_a_bad_door_variable_fails_its_targets_result_and_the_other_is_written(tmp_path):
    path, results = run_targets(tmp_path, timeout="soon")
    assert [(r.host, r.status) for r in results] == [("door-1", "failed"), ("door-2", "changed")]
    assert "tritonops_queue_timeout_ms" in results[0].msg and "hosts.yml:" in results[0].msg
    assert [g["labels"]["host"] for g in read_targets(path.read_text(), str(path))] == ["door-2"]


def test_a_balancer_s_exporter_is_scraped_where_it_binds_and_one_with_no_private_address_says_what_to_set(tmp_path):
    from tritonops.deploy.run import DeployReport
    from tritonops.deploy.targets import write_targets
    from tritonops.inventory import load_inventory
    from tritonops.planning.door import balancers_among
    from tritonops.transport.sessions import SessionPool

    path = tmp_path / "sd" / "targets.json"
    (tmp_path / "hosts.yml").write_text(f"""all:
  children:
    tritonops_balancers:
      hosts:
        door-1: {{ansible_host: 34.120.5.8, tritonops_bind_address: 10.9.0.2, tritonops_prometheus_file_sd: {path}}}
        door-2: {{ansible_host: 34.120.5.9, tritonops_prometheus_file_sd: {path}}}
""")
    hosts = load_inventory([str(tmp_path / "hosts.yml")]).select(None)
    results = []
    with SessionPool([]) as pool:
        write_targets(pool, [], DeployReport(), results.append, balancers_among(hosts))
    assert [group["targets"] for group in read_targets(path.read_text(), str(path))] == [["10.9.0.2:8405"]]
    assert [(r.host, r.status) for r in results] == [("door-2", "failed"), ("door-1", "changed")]
    assert "set tritonops_bind_address" in results[0].msg and "hosts.yml:" in results[0].msg
