"""A host lost in the middle of a rolling deploy on real lab hosts: it is reported `unreachable`, the
rest of the rollout goes on within max_fail_percentage, and the rerun converges.

Three deployments on the test lab's full host play three hosts (own folders, locks, containers and
ports). `r2` is reached through a TCP relay this test owns; when the second batch starts, the relay
is shut and its connections cut, as a host dropping off the network would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tritonops.lab.faults import Relay, relayed_known_hosts
from tritonops.lab.testing import FULL_2080TI
from tritonops.playbook.shipped import SHIPPED_PLAYBOOKS, SHIPPED_ROLES


@pytest.fixture
def fleet(lab, tmp_path, lab_ssh):
    full = lab.host(FULL_2080TI)
    relay = Relay((full.address, full.port))
    # the relay is the same sshd: its key, under the relay's port
    known = tmp_path / "known_hosts"
    known.write_text("\n".join(relayed_known_hosts(lab.known_hosts_file.read_text().splitlines(),
                                                   {full.port: relay.port})) + "\n")
    lab_vars = yaml.safe_load(lab.inventory_file.read_text())["all"]["children"]["lab"]["children"]["lab_full"]
    shared = {k: v for k, v in lab_vars["vars"].items() if k != "tritonops_build_host"}
    model = lab_vars["hosts"][FULL_2080TI].get("tritonops_model") or shared["tritonops_model"]

    def host(name, port, http):
        return {"ansible_host": full.address, "ansible_port": port, "tritonops_deployment": f"dep-{name}",
                "tritonops_http_port": http, "tritonops_grpc_port": http + 1, "tritonops_metrics_port": http + 2,
                "tritonops_model": model}

    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(lab.key_file),
                 "tritonops_known_hosts_file": str(known), "tritonops_build_host": "r1", **shared},
        "hosts": {"r1": host("r1", full.port, 28000), "r2": host("r2", relay.port, 28010),
                  "r3": host("r3", full.port, 28020)}}}))
    playbook = tmp_path / "playbooks" / "deploy.yml"
    playbook.parent.mkdir()
    original = yaml.safe_load((SHIPPED_PLAYBOOKS / "deploy.yml").read_text())
    original[0].update(serial=[1, 2], max_fail_percentage=50)
    playbook.write_text(yaml.safe_dump(original))
    clean = ("docker rm -f $(docker ps -aq --filter label=tritonops.deployment=dep-r1 "
             "--filter label=tritonops.deployment=dep-r2 --filter label=tritonops.deployment=dep-r3) "
             ">/dev/null 2>&1; rm -rf /opt/tritonops/dep-r1 /opt/tritonops/dep-r2 /opt/tritonops/dep-r3; true")
    lab_ssh(FULL_2080TI, clean)
    yield str(inventory), str(playbook), relay
    relay.close()
    lab_ssh(FULL_2080TI, clean)


def test_a_host_lost_mid_rollout_is_unreachable_the_rest_go_on_and_the_rerun_converges(fleet, lab_ssh):
    inventory, playbook, relay = fleet
    argv = [sys.executable, "-m", "tritonops", "deploy", "-i", inventory, "--playbook", playbook,
            "--roles-path", str(SHIPPED_ROLES)]
    # each run its own process, as from a terminal; the relay is cut when the first batch (r1) is done
    run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    progress = []
    for line in run.stderr:
        progress.append(line)
        if line.startswith("  r1 ") and "serve" in "".join(progress[-2:]).lower() and " changed " in line:
            relay.close()  # the host drops off the network: its connections cut, no new one accepted
    out, _ = run.communicate(timeout=600)
    assert run.returncode == 4, "".join(progress)
    text = "".join(progress)
    assert any(line.startswith("  r2 unreachable") for line in progress), text
    assert "stopped:" not in out  # within max_fail_percentage: the rollout went on
    for name in ("r1", "r3"):
        assert lab_ssh(FULL_2080TI, f"readlink /opt/tritonops/dep-{name}/current").stdout.startswith("releases/")
    assert lab_ssh(FULL_2080TI, "test -e /opt/tritonops/dep-r2/current", check=False).returncode == 1

    fixed = Relay(relay.target)  # the host is back (on a new relay port: write it into the inventory)
    data = yaml.safe_load(Path(inventory).read_text())
    data["all"]["hosts"]["r2"]["ansible_port"] = fixed.port
    known = Path(data["all"]["vars"]["tritonops_known_hosts_file"])
    known.write_text(known.read_text() + known.read_text().splitlines()[-1].replace(
        f":{relay.port} ", f":{fixed.port} ", 1) + "\n")
    Path(inventory).write_text(yaml.safe_dump(data))
    try:
        again = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    finally:
        fixed.close()
    assert again.returncode == 0, again.stderr[-3000:]
    assert "took over the lock" in again.stderr  # the lost run could not unlock r2; its process is gone
    assert lab_ssh(FULL_2080TI, "readlink /opt/tritonops/dep-r2/current").stdout.startswith("releases/")
