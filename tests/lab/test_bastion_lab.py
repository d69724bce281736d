"""GPU hosts that only a bastion can reach: `tritonops probe` through ProxyJump and through a
ProxyCommand (`ssh -W`), against the lab's real sshd hosts.

The hosts are named by their container names on the lab's Docker network: this machine cannot
resolve those names, the bastion (on that network) can.
"""

import json
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from tests.support.network import closed_port
from tritonops.cli.main import main
from tritonops.facts.probe import probe_hosts
from tritonops.lab.inventory import render_inventory, render_known_hosts
from tritonops.lab.request import build_request
from tritonops.lab.state import LabHost, LabState
from tritonops.lab.testing import BASTION, FULL_2080TI, LIGHT_H200X2, LIGHT_NOGPU

GPU_HOSTS = {FULL_2080TI: 1, LIGHT_H200X2: 2}  # name: GPUs


def by_host(report):
    return {host.host: host for host in report.hosts}


@pytest.fixture(scope="module")
def inventories(lab, tmp_path_factory):
    """Inventories of the lab's hosts behind its bastion: {"jump": path, "command": path}."""
    directory = tmp_path_factory.mktemp("behind-bastion")
    paths = {}
    for proxy in ("jump", "command"):
        paths[proxy] = directory / f"{proxy}.yml"
        paths[proxy].write_text(render_inventory(lab, lab.host(BASTION), proxy))
    return paths


@pytest.mark.lab
def test_the_hosts_cannot_be_reached_directly_by_their_lab_network_names(lab):
    direct = replace(lab.connection_behind(LIGHT_H200X2, BASTION), proxy_jump=None, connect_timeout_s=3)
    (host,) = probe_hosts([direct]).hosts
    assert host.status == "unreachable"
    assert host.msg.startswith(f"cannot connect to root@{lab.host(LIGHT_H200X2).container}:22: ")


@pytest.mark.lab
@pytest.mark.parametrize("proxy", ["jump", "command"])
def test_probe_reaches_every_gpu_host_through_the_bastion(lab, inventories, capsys, proxy):
    code = main(["probe", "-i", str(inventories[proxy]), "--limit", ":".join(GPU_HOSTS), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report
    hosts = {row["host"]: row for row in report["results"]}
    assert {name: h["status"] for name, h in hosts.items()} == {name: "ok" for name in GPU_HOSTS}
    assert {name: len(h["payload"]["nvidia"]["gpus"]) for name, h in hosts.items()} == GPU_HOSTS
    assert hosts[LIGHT_H200X2]["payload"]["nvidia"]["gpus"][0]["name"] == "NVIDIA H200"


@pytest.mark.lab
def test_an_unreachable_bastion_makes_the_hosts_behind_it_unreachable_and_no_others(lab):
    dead = f"root@127.0.0.1:{closed_port()}"
    behind = [replace(lab.connection_behind(name, BASTION), proxy_jump=dead, connect_timeout_s=3)
              for name in (LIGHT_H200X2, LIGHT_NOGPU)]
    report = by_host(probe_hosts([*behind, lab.connection(FULL_2080TI)], forks=3))
    for name in (LIGHT_H200X2, LIGHT_NOGPU):
        assert report[name].status == "unreachable"
        assert report[name].msg.startswith(f"cannot connect to bastion {dead}: ")
        assert "\n" not in report[name].msg
    assert report[FULL_2080TI].status == "ok"


@pytest.mark.lab
def test_a_host_the_bastion_cannot_reach_is_one_line_naming_the_bastion(lab):
    bastion = lab.host(BASTION)
    nowhere = replace(lab.connection_behind(LIGHT_H200X2, BASTION), host=f"{lab.prefix}-no-such-host")
    (host,) = probe_hosts([nowhere]).hosts
    assert host.status == "unreachable"
    assert host.msg == (f"bastion root@127.0.0.1:{bastion.port} could not open a connection to "
                        f"{lab.prefix}-no-such-host:22: Connect failed")


@pytest.mark.lab
def test_host_keys_are_checked_on_the_bastion_and_on_the_host_behind_it(lab, tmp_path):
    lines = Path(lab.known_hosts_file).read_text().splitlines()
    bastion_line = next(line for line in lines if line.startswith(f"[127.0.0.1]:{lab.host(BASTION).port} "))
    spec = lab.connection_behind(LIGHT_H200X2, BASTION)

    only_bastion = tmp_path / "only_bastion"
    only_bastion.write_text(bastion_line + "\n")
    (host,) = probe_hosts([replace(spec, known_hosts_file=str(only_bastion))]).hosts
    assert host.status == "unreachable"
    assert "unknown host key" in host.msg and f"for {lab.host(LIGHT_H200X2).container} " in host.msg

    empty = tmp_path / "empty"
    empty.write_text("")
    (host,) = probe_hosts([replace(spec, known_hosts_file=str(empty))]).hosts
    assert host.status == "unreachable"
    assert host.msg.startswith("bastion unknown host key ") and f"[127.0.0.1]:{lab.host(BASTION).port}" in host.msg
    assert empty.read_text() == ""


def test_the_inventory_behind_a_bastion_names_hosts_by_container_and_jumps(tmp_path):
    state = LabState("tritonops-lab", Path("/abs/.lab"), Path("/abs/inventory/lab.yml"), (
        LabHost("ws", "2080ti", "full", 22201, "tritonops-lab-ws"),
        LabHost("bastion", "nogpu", "bastion", 22202, "tritonops-lab-bastion")))
    doc = yaml.safe_load(render_inventory(state, state.host("bastion")))
    assert doc["all"]["vars"]["ansible_ssh_common_args"] == (
        "-o UserKnownHostsFile=/abs/.lab/known_hosts -o StrictHostKeyChecking=yes "
        "-o ProxyJump=root@127.0.0.1:22202")
    groups = doc["all"]["children"]["lab"]["children"]
    assert list(groups) == ["lab_full"]  # the bastion is not a GPU host
    assert groups["lab_full"]["hosts"]["ws"]["ansible_host"] == "tritonops-lab-ws"
    assert groups["lab_full"]["hosts"]["ws"]["ansible_port"] == 22

    direct = yaml.safe_load(render_inventory(state))
    assert list(direct["all"]["children"]["lab"]["children"]) == ["lab_full"]
    assert "ProxyJump" not in direct["all"]["vars"]["ansible_ssh_common_args"]


def test_known_hosts_name_a_host_on_port_22_without_brackets():
    assert render_known_hosts([("tritonops-lab-ws", 22, "ssh-ed25519 AAAAkey root@ws"),
                               ("127.0.0.1", 22201, "ssh-ed25519 AAAAkey root@ws")]) == (
        "tritonops-lab-ws ssh-ed25519 AAAAkey root@ws\n[127.0.0.1]:22201 ssh-ed25519 AAAAkey root@ws\n")


def test_lab_up_with_a_bastion_adds_one_and_puts_the_others_behind_it():
    request = build_request(bastion=True)
    assert request.behind_bastion and request.bastion == "bastion"
    assert [h.kind for h in request.hosts].count("bastion") == 1
    assert not build_request().behind_bastion and build_request().bastion is None
