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
        "ansible_host": "127.0.0.1", "ansible_port": 22201, "lab_gpu_profile": "2080ti", "lab_kind": "full"}}
    assert list(groups["lab_light"]["hosts"]) == ["light-01"]


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
