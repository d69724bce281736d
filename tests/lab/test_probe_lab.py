"""`tritonops probe` against real SSH hosts of the lab: real sshd, real NVML calls
through nvidia-ml-py into the lab's simulated libnvidia-ml.so.1."""

import json
import socket
from dataclasses import replace

import jsonschema
import pytest

from tests.support.network import closed_port
from tritonops.cli.main import main
from tritonops.facts.probe import probe_hosts
from tests.support.result_schema import SCHEMA as RESULT_SCHEMA
from tritonops.facts.model import report_from_json, report_to_json
from tritonops.facts.schema import probe_report_schema
from tritonops.lab import api
from tritonops.lab.profile_file import GpuFaults, SimulatedProcess
from tritonops.lab.testing import FULL_2080TI, LIGHT_H200X2, LIGHT_NOGPU
from tritonops.transport.spec import ConnectionSpec

pytestmark = pytest.mark.lab

GIB = 1024 ** 3


def by_host(report):
    return {host.host: host for host in report.hosts}


def test_probe_reads_each_lab_host_over_ssh(lab):
    names = [FULL_2080TI, LIGHT_H200X2, LIGHT_NOGPU]
    report = by_host(probe_hosts([lab.connection(name) for name in names], forks=3))

    ws = report[FULL_2080TI]
    assert ws.status == "ok", ws.msg
    (gpu,) = ws.facts.nvidia.gpus
    assert (gpu.name, gpu.compute_capability) == ("NVIDIA GeForce RTX 2080 Ti", (7, 5))
    assert gpu.memory_total_bytes == 11264 * 1024 * 1024
    assert ws.facts.docker.version and ws.facts.docker.nvidia_container_toolkit

    h200 = report[LIGHT_H200X2]
    assert h200.status == "ok", h200.msg
    assert [g.memory_total_bytes for g in h200.facts.nvidia.gpus] == [150_754_820_096] * 2
    assert [g.cuda_total_bytes for g in h200.facts.nvidia.gpus] == [150_109_880_320] * 2
    assert [(l.kind, l.p2p_read) for l in h200.facts.nvidia.links] == [("NV18", True)]
    assert h200.facts.nvidia.driver_version == "580.159.04"
    assert h200.facts.docker.present is False  # light hosts have no Docker

    nogpu = report[LIGHT_NOGPU]
    assert nogpu.status == "failed"
    assert nogpu.msg == "no NVIDIA driver (libnvidia-ml.so.1 not found)"
    assert nogpu.facts.system.cpu_count >= 1  # the rest of the facts still came back


def test_an_nvml_error_on_one_gpu_is_reported_for_that_gpu(lab):
    api.set_gpu_faults(lab, LIGHT_H200X2, GpuFaults(gpu_fail=((1, "nvmlDeviceGetMemoryInfo", 15),)))
    try:
        (host,) = probe_hosts([lab.connection(LIGHT_H200X2)]).hosts
    finally:
        api.set_gpu_faults(lab, LIGHT_H200X2, GpuFaults())
    assert host.status == "failed"
    gpu0, gpu1 = host.facts.nvidia.gpus
    assert gpu0.errors == () and gpu0.memory_total_bytes == 150_754_820_096
    assert len(gpu1.errors) == 1 and gpu1.errors[0].startswith("nvmlDeviceGetMemoryInfo")
    assert "GPU 1: nvmlDeviceGetMemoryInfo" in host.msg


def test_processes_on_a_gpu_show_up_with_their_memory(lab):
    busy = GpuFaults(processes=((0, SimulatedProcess(pid=4242, used_bytes=20 * GIB)),))
    api.set_gpu_faults(lab, LIGHT_H200X2, busy)
    try:
        (host,) = probe_hosts([lab.connection(LIGHT_H200X2)]).hosts
    finally:
        api.set_gpu_faults(lab, LIGHT_H200X2, GpuFaults())
    gpu0, gpu1 = host.facts.nvidia.gpus
    assert [(p.pid, p.used_memory_bytes) for p in gpu0.processes] == [(4242, 20 * GIB)]
    assert gpu0.memory_free_bytes < gpu1.memory_free_bytes
    assert gpu1.processes == ()


def test_unreachable_host_is_reported_and_the_others_still_print(lab, capsys):
    ghost = ConnectionSpec(name="ghost", host="127.0.0.1", port=closed_port(), user="root", connect_timeout_s=3)
    report = by_host(probe_hosts([ghost, lab.connection(LIGHT_H200X2)], forks=2))
    assert report["ghost"].status == "unreachable"
    assert "cannot connect" in report["ghost"].msg
    assert report[LIGHT_H200X2].status == "ok"

    inventory = lab.inventory_file
    code = main(["probe", "-i", str(inventory), "--limit", f"{LIGHT_H200X2}:{LIGHT_NOGPU}"])
    table = capsys.readouterr().out
    assert code == 2  # the driverless host failed
    assert LIGHT_H200X2 in table and "2× H200 140 GiB NVLink" in table
    assert LIGHT_NOGPU in table and "no NVIDIA driver" in table


def test_unknown_host_key_is_refused_until_trusted(lab, tmp_path):
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    spec = replace(lab.connection(LIGHT_H200X2), known_hosts_file=str(known_hosts))

    (refused,) = probe_hosts([spec]).hosts
    assert refused.status == "unreachable"
    port = lab.host(LIGHT_H200X2).port
    assert "unknown host key" in refused.msg
    assert f"ssh-keyscan -p {port} 127.0.0.1 >> {known_hosts}" in refused.msg
    assert known_hosts.read_text() == ""  # nothing trusted behind the user's back

    (accepted,) = probe_hosts([spec], accept_new_host_keys=True).hosts
    assert accepted.status == "ok"
    assert f"[127.0.0.1]:{port} ssh-ed25519 " in known_hosts.read_text()

    (again,) = probe_hosts([spec]).hosts  # now known: strict checking passes
    assert again.status == "ok"


def test_changed_host_key_is_refused_even_with_accept_new(lab, tmp_path):
    port = lab.host(LIGHT_H200X2).port
    other = lab.host(FULL_2080TI).port
    real_lines = open(lab.known_hosts_file).read().splitlines()
    other_key = next(line for line in real_lines if line.startswith(f"[127.0.0.1]:{other} "))
    known_hosts = tmp_path / "known_hosts"
    # The H200 host's name with the 2080 Ti host's key: as if the host had been replaced.
    known_hosts.write_text(other_key.replace(f"[127.0.0.1]:{other}", f"[127.0.0.1]:{port}") + "\n")
    spec = replace(lab.connection(LIGHT_H200X2), known_hosts_file=str(known_hosts))

    for accept in (False, True):
        (host,) = probe_hosts([spec], accept_new_host_keys=accept).hosts
        assert host.status == "unreachable"
        assert "has CHANGED" in host.msg and "ssh-keygen -R" in host.msg


def test_probe_json_over_ssh_validates_against_the_schema(lab, capsys):
    code = main(["probe", "-i", str(lab.inventory_file), "--limit", f"{FULL_2080TI}:{LIGHT_H200X2}", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    jsonschema.validate(doc, RESULT_SCHEMA)  # the one result document; each row's payload the host's facts
    jsonschema.validate(report_to_json(report_from_json(doc)), probe_report_schema())
    assert [row["host"] for row in doc["results"]] == [FULL_2080TI, LIGHT_H200X2]


def test_probe_by_address_with_user_and_port(lab, capsys, tmp_path, monkeypatch):
    port = lab.host(LIGHT_H200X2).port
    # An explicit address has no inventory: the key and known_hosts come from ~/.ssh/config.
    config = tmp_path / "ssh_config"
    config.write_text(f"Host 127.0.0.1\n  IdentityFile {lab.key_file}\n  UserKnownHostsFile {lab.known_hosts_file}\n")
    monkeypatch.setenv("TRITONOPS_SSH_CONFIG", str(config))
    code = main(["probe", f"root@127.0.0.1:{port}", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0, doc
    assert doc["results"][0]["host"] == f"root@127.0.0.1:{port}"
    assert len(doc["results"][0]["payload"]["nvidia"]["gpus"]) == 2


def test_ssh_connections_have_nagle_off(lab):
    """paramiko leaves Nagle's algorithm on; an SSH handshake then waits for delayed ACKs (~40 ms each).
    Our transport turns it off, directly and for a ProxyJump's first hop."""
    from tritonops.transport.sessions import open_transport

    transport = open_transport(lab.connection(LIGHT_H200X2))
    try:
        sock = transport.ssh_client.get_transport().sock
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert transport.run("echo ok").stdout == "ok\n"
    finally:
        transport.close()


def test_the_gpus_a_container_gets_come_from_the_probed_topology(lab):
    from tritonops.planning.gpu_choice import place_replicas, restrict_facts
    from tritonops.planning.placement import ReplicaPorts

    ports = ReplicaPorts(8000, 8001, 8002)
    (host,) = probe_hosts([lab.connection(LIGHT_H200X2)]).hosts
    pair = place_replicas(host.facts, 2, None, 1, ports, 10)
    assert [(r.gpus, r.link) for r in pair.replicas] == [((0, 1), "NV18")] and pair.reasons == ()  # read over SSH
    only = restrict_facts(host.facts, (1,))
    assert [g.index for g in only.nvidia.gpus] == [1]
    assert [r.gpus for r in place_replicas(only, 1, (1,), 1, ports, 10).replicas] == [(1,)]
