"""tritonops.api over fabric on real lab hosts: the example fabfile (docs/examples/fabfile.py), run by the real `fab`
command, deploys to the test lab's full host through a fabric ThreadingGroup made from fabric's own configuration
(an SSH config alias, its key and known_hosts file), and the Triton it started serves; `tritonops.api.status`
then reads the same host through a fabric Connection. The adapter keeps tritonops' host-key policy where fabric's
own would trust any key: an unknown key is refused, also for a Connection the caller had already opened; the
sessions it opens have Nagle's algorithm off.
"""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fabric import Config, Connection, ThreadingGroup

from tests.lab.test_serve_lab import full_host_shell
from tritonops import api
from tritonops.lab.testing import FULL_2080TI, LIGHT_H200X2, LIGHT_NOGPU
from tritonops.transport.sessions import open_transport

ROOT = "/opt/tritonops"
DEPLOYMENT = "dep-fabric"
PORTS = {"tritonops_http_port": 19100, "tritonops_grpc_port": 19101, "tritonops_metrics_port": 19102}
FABFILE_DIR = Path(__file__).resolve().parents[2] / "docs" / "examples"


def ssh_config(lab, path: Path, known_hosts: Path | None = None) -> Path:
    """An SSH client config naming the lab hosts by alias, as a fabfile's user has in ~/.ssh/config."""
    blocks = [f"Host {h.name}\n  HostName {h.address}\n  Port {h.port}\n  User root\n  IdentityFile {lab.key_file}\n"
              f"  UserKnownHostsFile {known_hosts or lab.known_hosts_file}\n" for h in lab.hosts]
    path.write_text("".join(blocks))
    return path


def fabric_config(lab, folder: Path, known_hosts: Path | None = None) -> Config:
    return Config(runtime_ssh_path=str(ssh_config(lab, folder / "ssh_config", known_hosts)))


def fleet_vars(lab) -> dict:
    """The lab full host's group variables (its image settings, the lab's package index), its model, our own
    deployment and ports."""
    lab_vars = yaml.safe_load(lab.inventory_file.read_text())["all"]["children"]["lab"]["children"]["lab_full"]
    own = lab_vars["hosts"][FULL_2080TI]
    return {**lab_vars["vars"], "tritonops_model": own.get("tritonops_model") or lab_vars["vars"]["tritonops_model"],
            "tritonops_build_host": FULL_2080TI, "tritonops_deployment": DEPLOYMENT, **PORTS}


@pytest.fixture(scope="module")
def clean(lab):
    yield from full_host_shell(lab, DEPLOYMENT, timeout=120)


def test_the_example_fabfile_deploys_through_fabric_and_status_reads_the_same_host(lab, clean, tmp_path):
    runtime = tmp_path / "fabric.yaml"
    runtime.write_text(yaml.safe_dump({"tritonops": {"hosts": [FULL_2080TI], "vars": fleet_vars(lab)}}))
    ssh_config(lab, tmp_path / "ssh_config")
    fab = [sys.executable, "-m", "fabric", "-r", str(FABFILE_DIR), "-f", str(runtime),
           "-S", str(tmp_path / "ssh_config"), "deploy"]
    done = subprocess.run(fab, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{FULL_2080TI} ok=" in done.stdout and "unreachable=0 failed=0" in done.stdout, done.stdout
    assert "vllm_model TP 1, max_model_len" in done.stdout, done.stdout

    again = subprocess.run(fab, capture_output=True, text=True, timeout=600, cwd=tmp_path)  # nothing left to do
    assert again.returncode == 0 and f"{FULL_2080TI} ok=" in again.stdout and " changed=0 " in again.stdout, \
        again.stdout + again.stderr

    current = clean(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip().rsplit("/", 1)[-1]
    assert current, "no current release after the fabfile's deploy"
    generated = clean("curl -s -X POST localhost:19100/v2/models/vllm_model/generate "
                      "-d '{\"text_input\": \"hello\", \"parameters\": {\"max_tokens\": 4}}'").stdout
    assert json.loads(generated)["text_output"]

    config = fabric_config(lab, tmp_path)
    results = api.status(hosts=ThreadingGroup(FULL_2080TI, config=config), vars=fleet_vars(lab))
    (found,) = results
    assert (found.host, found.status, found.task) == (FULL_2080TI, "ok", "status"), found
    assert found.payload.current == current and found.payload.ready

    fab_status = subprocess.run([*fab[:-1], "status"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert fab_status.returncode == 0 and f"{FULL_2080TI} ok {current}" in fab_status.stdout, fab_status.stdout


def test_an_unknown_host_key_is_refused_where_fabric_would_have_trusted_it(lab, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    config = fabric_config(lab, tmp_path, known_hosts=empty)

    (result,) = api.probe(hosts=[Connection(LIGHT_NOGPU, config=config)])
    assert result.status == "unreachable" and "unknown host key" in result.msg, result
    assert f"ssh-keyscan -p {lab.host(LIGHT_NOGPU).port} 127.0.0.1 >> {empty}" in result.msg
    assert empty.read_text() == ""  # nothing trusted on the way

    opened = Connection(LIGHT_NOGPU, config=config)
    opened.open()  # by fabric itself, with its AutoAddPolicy: the key was never checked
    try:
        (result,) = api.probe(hosts=[opened])
        assert result.status == "unreachable" and "unknown host key" in result.msg, result
        assert opened.is_connected  # the caller's connection: left open for the caller
    finally:
        opened.close()


def test_a_known_key_opens_a_session_with_nagle_off_that_commands_sftp_and_docker_ride(lab, tmp_path):
    from tritonops.image.docker_ssh import docker_client
    from tritonops.transport.fabric_adapter import FabricTransport, fabric_spec

    connection = Connection(FULL_2080TI, config=fabric_config(lab, tmp_path))  # the host with a Docker engine
    spec = fabric_spec(FULL_2080TI, connection)
    assert spec.known_hosts_file == str(lab.known_hosts_file)  # the alias's UserKnownHostsFile
    transport = open_transport(spec)
    try:
        assert isinstance(transport, FabricTransport) and transport.ssh_client is connection.client
        sock = connection.transport.sock
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        hostname = transport.run("hostname").stdout.strip()
        assert hostname
        with transport.ssh_client.open_sftp() as sftp:
            with sftp.open("/etc/hostname") as file:
                assert file.read().decode().strip() == hostname
        engine = docker_client(transport)
        try:
            assert engine.info()["Name"] == hostname  # the host's own engine, over this session
        finally:
            engine.close()
    finally:
        transport.close()
    assert not connection.is_connected  # tritonops opened it, tritonops closed it


def test_a_connection_the_caller_opened_with_a_known_key_is_used_and_left_open(lab, tmp_path):
    opened = Connection(LIGHT_H200X2, config=fabric_config(lab, tmp_path))
    opened.open()
    try:
        (result,) = api.probe(hosts={"h200s": opened})
        assert (result.host, result.status) == ("h200s", "ok"), result
        assert len(result.payload.nvidia.gpus) == 2  # the probe's facts came over the caller's session
        assert opened.is_connected and opened.run("true", hide=True, in_stream=False).ok  # still the caller's to use
    finally:
        opened.close()
