"""A balancer host in the lab (issue #31, the front door): the balancer lab the front-door files share
(tests/support/balancer_lab.py: `balancer-1` and a full host, never the test lab's own), reached over real SSH like
every lab host."""

from __future__ import annotations

import re
import socket
import subprocess

from tests.support.balancer_lab import BALANCER, PREFIX, SECOND
from tritonops.lab import api

DOOR_PORT = 18080


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


def test_the_balancer_is_a_lab_host_with_debians_haproxy_2_6(balancer):
    version = ssh(balancer, BALANCER, "haproxy -v").stdout
    found = re.search(r"HAProxy version (\d+)\.(\d+)", version)
    assert found and (int(found[1]), int(found[2])) >= (2, 6), version
    assert ssh(balancer, BALANCER, "id -u").stdout.strip() == "0"
    assert ssh(balancer, BALANCER, "command -v dockerd || echo none").stdout.strip() == "none"
    hosts = {h.name: h for h in api.status(state_dir=balancer.state_dir, name_prefix=PREFIX).hosts}
    assert (hosts[BALANCER].kind, hosts[BALANCER].profile, hosts[BALANCER].healthy) == ("balancer", "nogpu", True)


def test_a_root_ssh_session_starts_haproxy_and_this_machine_reaches_its_door(balancer):
    # The container's nofile limit is this machine's hard limit (20000 here; raising it needs CAP_SYS_RESOURCE,
    # which the kernel withholds): haproxy asks for about 2 x maxconn + a few descriptors.
    nofile = int(ssh(balancer, BALANCER, "ulimit -n").stdout)
    maxconn = (nofile - 100) // 2
    config = (f"global\\n    maxconn {maxconn}\\n    master-worker\\n"
              "defaults\\n    mode http\\n    timeout connect 1s\\n    timeout client 5s\\n    timeout server 5s\\n"
              f"frontend door\\n    bind *:{DOOR_PORT}\\n    http-request return status 200\\n")
    ssh(balancer, BALANCER, f"printf '{config}' > /tmp/door.cfg && haproxy -c -f /tmp/door.cfg "
                            "&& haproxy -D -f /tmp/door.cfg -p /tmp/door.pid")
    try:
        door = balancer.host(BALANCER).network_address
        assert door and connects(door, DOOR_PORT)
    finally:
        ssh(balancer, BALANCER, "kill $(cat /tmp/door.pid)")


def test_the_inventory_puts_the_balancer_in_tritonops_balancers_and_names_reachable_addresses(balancer):
    from tritonops.inventory import load_inventory

    inventory = load_inventory([str(balancer.inventory_file)])
    assert inventory.groups["tritonops_balancers"].hosts == (BALANCER,)
    door, gpu = inventory.host(BALANCER), inventory.host(SECOND)
    assert {"all", "lab", "tritonops_balancers"} <= set(door.groups)
    assert "tritonops_balancers" not in gpu.groups
    assert door.vars["lab_door_address"] == balancer.host(BALANCER).network_address
    # HAProxy's exporter binds to the balancer's lab-network address, where the lab's Prometheus reaches it (its
    # ansible_host is this machine's loopback, a port mapped to sshd alone)
    from tritonops.planning.door import exporter_bind

    assert door.vars["tritonops_bind_address"] == exporter_bind(door) == balancer.host(BALANCER).network_address
    address = gpu.vars["tritonops_replica_address"]
    assert address == balancer.host(SECOND).network_address
    assert connects(address, 22)  # from this machine
    reach = f"python3 -c \"import socket; socket.create_connection(('{address}', 22), timeout=5)\""
    ssh(balancer, BALANCER, reach)  # and from the balancer, as HAProxy reaches the replicas
