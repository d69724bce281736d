"""The inventory and known_hosts `lab up` writes (no Docker)."""

from pathlib import Path

import yaml

from tritonops.lab.inventory import render_inventory, render_known_hosts
from tritonops.lab.state import LabHost, LabState


def _state():
    hosts = (LabHost("ws-2080ti", "2080ti", "full", 22201, "tritonops-lab-ws-2080ti"),
             LabHost("light-01", "h200x8", "light", 22202, "tritonops-lab-light-01"))
    return LabState("tritonops-lab", Path("/abs/.lab"), Path("/abs/inventory/lab.yml"), hosts)


def test_inventory_is_ansible_shaped_with_strict_host_keys():
    doc = yaml.safe_load(render_inventory(_state()))
    assert doc["all"]["vars"] == {
        "ansible_user": "root",
        "ansible_ssh_private_key_file": "/abs/.lab/id_ed25519",
        "ansible_ssh_common_args": "-o UserKnownHostsFile=/abs/.lab/known_hosts -o StrictHostKeyChecking=yes",
    }
    groups = doc["all"]["children"]["lab"]["children"]
    assert groups["lab_full"]["hosts"] == {"ws-2080ti": {
        "ansible_host": "127.0.0.1", "ansible_port": 22201, "lab_gpu_profile": "2080ti", "lab_kind": "full",
        "tritonops_model": "/abs/.lab/models/micro-llama"}}
    assert list(groups["lab_light"]["hosts"]) == ["light-01"]


def test_the_full_hosts_name_the_lab_model_and_a_2080ti_host_a_smaller_one():
    hosts = (LabHost("ws-2080ti", "2080ti", "full", 22201, "c1"), LabHost("node-h200x8", "h200x8", "full", 22202, "c2"),
             LabHost("light-01", "h200x8", "light", 22203, "c3"))
    doc = yaml.safe_load(render_inventory(LabState("p", Path("/abs/.lab"), Path("/abs/lab.yml"), hosts)))
    groups = doc["all"]["children"]["lab"]["children"]
    assert groups["lab_full"]["vars"]["tritonops_model"] == "/abs/.lab/models/tiny-llama"
    assert groups["lab_full"]["hosts"]["ws-2080ti"]["tritonops_model"] == "/abs/.lab/models/micro-llama"
    assert "tritonops_model" not in groups["lab_full"]["hosts"]["node-h200x8"]
    # every GPU of a multi-GPU full host serves: four replicas at TP 2 on the H200 host
    assert {k: v for k, v in groups["lab_full"]["hosts"]["node-h200x8"].items() if k.startswith("tritonops_")} == \
        {"tritonops_replicas": 4, "tritonops_tensor_parallel_size": 2}
    assert "tritonops_replicas" not in groups["lab_full"]["hosts"]["ws-2080ti"]
    assert "tritonops_replicas" not in groups["lab_light"]["hosts"]["light-01"]
    assert "vars" not in groups["lab_light"] and "tritonops_model" not in groups["lab_light"]["hosts"]["light-01"]
    without = yaml.safe_load(render_inventory(LabState("p", Path("/abs/.lab"), Path("/abs/lab.yml"), hosts),
                                              models=False))
    assert "tritonops_model" not in str(without)


def test_lab_models_are_written_once_and_the_default_tiny_model_is_unchanged(tmp_path):
    import hashlib

    from tritonops.lab.hub import tiny_model
    from tritonops.lab.hub.model import LAB_MODELS
    from tritonops.lab.models import models_dir, remove_models, write_models
    from tritonops.sizing.model_source import load_model_spec

    # tests elsewhere pin these bytes (the hub's tiny-llama); its tokenizer.json a whole tokenizers file since issue #24
    assert hashlib.sha256(b"".join(tiny_model().values())).hexdigest()[:16] == "0653b331c3f5a5fe"
    written = write_models(tmp_path)
    assert {p.parent.name for p in written} == set(LAB_MODELS) and len(written) == 14
    tiny, micro = models_dir(tmp_path) / "tiny-llama", models_dir(tmp_path) / "micro-llama"
    assert {p.name: p.read_bytes() for p in tiny.iterdir()} == tiny_model()
    mtimes = {p: p.stat().st_mtime_ns for p in written}
    (micro / "stray.bin").write_bytes(b"x")
    (micro / "config.json").write_text("{}")
    assert sorted(p.name for p in write_models(tmp_path)) == ["config.json", "stray.bin"]
    assert write_models(tmp_path) == []
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items() if p.name != "config.json")
    specs = [load_model_spec(str(folder)) for folder in (tiny, micro)]
    assert [(s.hidden_size, s.num_hidden_layers) for s in specs] == [(384, 1), (256, 2)]
    assert remove_models(tmp_path) and not models_dir(tmp_path).exists() and not remove_models(tmp_path)


def test_an_empty_group_is_left_out():
    state = _state()
    only_full = LabState(state.prefix, state.state_dir, state.inventory_file, state.hosts[:1])
    assert list(yaml.safe_load(render_inventory(only_full))["all"]["children"]["lab"]["children"]) == ["lab_full"]


def test_known_hosts_lines_name_the_loopback_port():
    assert render_known_hosts([("127.0.0.1", 22201, "ssh-ed25519 AAAAkey root@ws\n")]) == \
        "[127.0.0.1]:22201 ssh-ed25519 AAAAkey root@ws\n"


def test_connection_and_ssh_argv_use_the_lab_key_and_known_hosts():
    state = _state()
    spec = state.connection("ws-2080ti")
    assert (spec.host, spec.port, spec.user, spec.key_files, spec.known_hosts_file, spec.strict_host_key_checking) == (
        "127.0.0.1", 22201, "root", ("/abs/.lab/id_ed25519",), "/abs/.lab/known_hosts", "yes")
    argv = state.ssh_argv("light-01", "true")
    assert argv[:3] == ["ssh", "-F", "/dev/null"] and "StrictHostKeyChecking=yes" in argv
    assert argv[-2:] == ["root@127.0.0.1", "true"] and argv[argv.index("-p") + 1] == "22202"


def test_the_releases_helper_describes_a_host_and_fails_without_a_release():
    from tritonops.lab.releases import HostReleases, describe

    release = {"image_id": "sha256:338078796b8522af8d09", "who": "root@vm", "models": [
        {"name": "vllm_model", "version": 1, "model": "/abs/.lab/models/micro-llama",
         "engine": {"gpu_count": 1, "gpu_name": "NVIDIA GeForce RTX 2080 Ti", "tensor_parallel_size": 1,
                    "max_model_len": 1024, "dtype": "float16"}}]}
    found = HostReleases("ws-2080ti", "/opt/tritonops/default", ["20261201T0900Z-e77234d0"], release,
                         ["release.json"], ["/opt/tritonops/default/models/micro-llama@acc38f2e8aa7"])
    lines = describe(found)
    assert lines[0] == "ws-2080ti: 1 release(s) under /opt/tritonops/default/releases, newest 20261201T0900Z-e77234d0"
    assert "vllm_model v1: /abs/.lab/models/micro-llama on 1 x NVIDIA GeForce RTX 2080 Ti: TP 1, " \
           "max_model_len 1024, float16" in lines[2]
    assert describe(HostReleases("h", "/opt/tritonops/default")) == [
        "h: no release under /opt/tritonops/default/releases"]


def _door_state(with_balancer: bool):
    hosts = (LabHost("ws-2080ti", "2080ti", "full", 22201, "p-ws-2080ti", network_address="172.30.0.2"),
             LabHost("light-01", "h200x8", "light", 22202, "p-light-01", network_address="172.30.0.3"),
             LabHost("bastion", "nogpu", "bastion", 22203, "p-bastion", network_address="172.30.0.4"))
    if with_balancer:
        hosts += (LabHost("balancer-1", "nogpu", "balancer", 22204, "p-balancer-1", network_address="172.30.0.5"),)
    return LabState("p", Path("/abs/.lab"), Path("/abs/lab.yml"), hosts)


def test_a_lab_without_a_balancer_writes_the_inventory_it_always_did_but_for_the_full_hosts_relay_address():
    plain = tuple(LabHost(h.name, h.profile, h.kind, h.port, h.container) for h in _door_state(False).hosts)
    state = _door_state(False)
    with_addresses = yaml.safe_load(render_inventory(state))
    full = with_addresses["all"]["children"]["lab"]["children"]["lab_full"]["hosts"]["ws-2080ti"]
    assert full.pop("tritonops_relay_address") == "172.30.0.2"  # where the other hosts pass it the image
    assert with_addresses == yaml.safe_load(render_inventory(LabState("p", state.state_dir, state.inventory_file,
                                                                      plain)))
    assert "tritonops_balancers" not in render_inventory(state)
    assert "tritonops_relay_address" not in str(with_addresses["all"]["children"]["lab"]["children"]["lab_light"])


def test_a_balancer_host_is_the_front_door_and_every_gpu_host_says_where_it_reaches_the_replicas():
    doc = yaml.safe_load(render_inventory(_door_state(True)))
    groups = doc["all"]["children"]["lab"]["children"]
    assert list(groups) == ["lab_full", "lab_light", "tritonops_balancers"]
    assert groups["tritonops_balancers"] == {"hosts": {"balancer-1": {
        "ansible_host": "127.0.0.1", "ansible_port": 22204, "lab_kind": "balancer",
        "tritonops_api_keys_file": "/etc/tritonops/lab-door.keys", "lab_door_address": "172.30.0.5",
        "tritonops_door_address": "172.30.0.5", "tritonops_bind_address": "172.30.0.5"}}}
    assert groups["lab_full"]["hosts"]["ws-2080ti"]["tritonops_replica_address"] == "172.30.0.2"
    assert groups["lab_light"]["hosts"]["light-01"]["tritonops_replica_address"] == "172.30.0.3"
    # otherwise the same inventory: only the replica addresses and the balancers' group are new
    before = yaml.safe_load(render_inventory(_door_state(False)))["all"]["children"]["lab"]["children"]
    for group in ("lab_full", "lab_light"):
        for name, entry in groups[group]["hosts"].items():
            assert {k: v for k, v in entry.items() if k != "tritonops_replica_address"} == \
                before[group]["hosts"][name]


def test_behind_a_bastion_the_balancer_is_reached_by_its_container_name_too():
    state = _door_state(True)
    doc = yaml.safe_load(render_inventory(state, state.host("bastion")))
    door = doc["all"]["children"]["lab"]["children"]["tritonops_balancers"]["hosts"]["balancer-1"]
    assert (door["ansible_host"], door["ansible_port"], door["lab_door_address"]) == ("p-balancer-1", 22, "172.30.0.5")


def test_the_lab_inventory_with_a_balancer_loads_with_the_balancer_in_its_group(tmp_path):
    from tritonops.inventory import load_inventory

    path = tmp_path / "lab.yml"
    path.write_text(render_inventory(_door_state(True), models=False))
    inventory = load_inventory([str(path)])
    assert inventory.groups["tritonops_balancers"].hosts == ("balancer-1",)
    door = inventory.host("balancer-1")
    assert {"all", "lab", "tritonops_balancers"} <= set(door.groups)
    assert door.vars["lab_door_address"] == "172.30.0.5" and door.connection.port == 22204
    assert inventory.host("light-01").vars["tritonops_replica_address"] == "172.30.0.3"


def test_an_index_that_does_not_start_fails_the_build_host_instead_of_becoming_a_note(monkeypatch):
    """The lab's deploys build vllm_env with `pip install vllm` from the index on the build host: `lab up` used to
    print "the lab package index on ... did not start" among its notes and exit 0 (issue #45)."""
    from tritonops.lab import api
    from tritonops.results import HostResult

    class Session:
        name = "ws-2080ti"

        def close(self):
            pass

    def not_started(transport, port):
        raise RuntimeError(f"the index on {transport.name}:{port} its server exited: Address already in use")

    monkeypatch.setattr("tritonops.transport.ssh.SshTransport.open", lambda spec: Session())
    monkeypatch.setattr("tritonops.lab.wheelhouse.index_answers", lambda transport, port: False)
    monkeypatch.setattr("tritonops.lab.wheelhouse.serve_on_host", not_started)
    notes, failure = api._serve_wheelhouse(_state())
    assert notes == [] and failure.host == "ws-2080ti" and failure.status == "failed"
    assert failure.msg.startswith("the lab package index did not start: the index on ws-2080ti:18431 its server")
    created = HostResult("ws-2080ti", "changed", "created", elapsed_s=3.0)
    assert api.with_failure(created, failure) == HostResult(
        "ws-2080ti", "failed", f"created; {failure.msg}", elapsed_s=3.0)
