"""A balancer host in the lab (issue #31, the front door): its own small lab (prefix tritonops-labbal, never the
shared test lab's), one light host and `balancer-1`, reached over real SSH like every lab host."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from tritonops.lab import api
from tritonops.lab.testing import test_lab_port_base, test_lab_prefix
from tritonops.lab.request import LabRequest, HostSpec, balancer_hosts

PREFIX = test_lab_prefix("bal")
PORT_BASE = test_lab_port_base(100)
LIGHT = "b-light-h200x2"
BALANCER = "balancer-1"
DOOR_PORT = 18080


@pytest.fixture(scope="module")
def door_lab():
    state_dir = Path(tempfile.gettempdir()) / PREFIX
    request = LabRequest((HostSpec(LIGHT, "h200x2", "light"),) + balancer_hosts(1))
    try:
        state = api.up(request, state_dir=state_dir, name_prefix=PREFIX, port_base=PORT_BASE)
        if state.results.failed:
            pytest.fail("lab up failed: " + "; ".join(f"{r.host}: {r.msg}" for r in state.results.failed))
        yield state
    finally:
        if not os.environ.get("TRITONOPS_LAB_KEEP"):
            api.down(state_dir=state_dir, name_prefix=PREFIX)


def ssh(state, host: str, command: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(state.ssh_argv(host, command), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{host}: '{command}' exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def connects(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=5):
            return True
    except OSError:
        return False


def test_the_balancer_is_a_lab_host_with_debians_haproxy_2_6(door_lab):
    version = ssh(door_lab, BALANCER, "haproxy -v").stdout
    found = re.search(r"HAProxy version (\d+)\.(\d+)", version)
    assert found and (int(found[1]), int(found[2])) >= (2, 6), version
    assert ssh(door_lab, BALANCER, "id -u").stdout.strip() == "0"
    assert ssh(door_lab, BALANCER, "command -v dockerd || echo none").stdout.strip() == "none"
    hosts = {h.name: h for h in api.status(state_dir=door_lab.state_dir, name_prefix=PREFIX).hosts}
    assert (hosts[BALANCER].kind, hosts[BALANCER].profile, hosts[BALANCER].healthy) == ("balancer", "nogpu", True)


def test_a_root_ssh_session_starts_haproxy_and_this_machine_reaches_its_door(door_lab):
    # The container's nofile limit is this machine's hard limit (20000 here; raising it needs CAP_SYS_RESOURCE,
    # which the kernel withholds): haproxy asks for about 2 x maxconn + a few descriptors.
    nofile = int(ssh(door_lab, BALANCER, "ulimit -n").stdout)
    maxconn = (nofile - 100) // 2
    config = (f"global\\n    maxconn {maxconn}\\n    master-worker\\n"
              "defaults\\n    mode http\\n    timeout connect 1s\\n    timeout client 5s\\n    timeout server 5s\\n"
              f"frontend door\\n    bind *:{DOOR_PORT}\\n    http-request return status 200\\n")
    ssh(door_lab, BALANCER, f"printf '{config}' > /tmp/door.cfg && haproxy -c -f /tmp/door.cfg "
                            "&& haproxy -D -f /tmp/door.cfg -p /tmp/door.pid")
    try:
        door = door_lab.host(BALANCER).network_address
        assert door and connects(door, DOOR_PORT)
    finally:
        ssh(door_lab, BALANCER, "kill $(cat /tmp/door.pid)")


def test_the_inventory_puts_the_balancer_in_tritonops_balancers_and_names_reachable_addresses(door_lab):
    from tritonops.inventory import load_inventory

    inventory = load_inventory([str(door_lab.inventory_file)])
    assert inventory.groups["tritonops_balancers"].hosts == (BALANCER,)
    balancer, light = inventory.host(BALANCER), inventory.host(LIGHT)
    assert {"all", "lab", "tritonops_balancers"} <= set(balancer.groups)
    assert "tritonops_balancers" not in light.groups
    assert balancer.vars["lab_door_address"] == door_lab.host(BALANCER).network_address
    # HAProxy's exporter binds to the balancer's lab-network address, where the lab's Prometheus reaches it (its
    # ansible_host is this machine's loopback, a port mapped to sshd alone)
    from tritonops.planning.door import exporter_bind

    assert balancer.vars["tritonops_bind_address"] == exporter_bind(balancer) == door_lab.host(BALANCER).network_address
    address = light.vars["tritonops_replica_address"]
    assert address == door_lab.host(LIGHT).network_address
    assert connects(address, 22)  # from this machine
    reach = f"python3 -c \"import socket; socket.create_connection(('{address}', 22), timeout=5)\""
    ssh(door_lab, BALANCER, reach)  # and from the balancer, as HAProxy reaches the replicas
