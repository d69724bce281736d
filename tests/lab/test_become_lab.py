"""ansible_become against a real sudo (Debian 12's 1.9.13) on lab hosts reached as non-root users:
`deployer` (sudo with its password), `opsbot` (sudo NOPASSWD) and `nosudo` (not in sudoers).

With become, `tritonops probe` works and `tritonops lock release` removes a lock in a root-owned folder that
deployer alone cannot touch; the password comes from the inventory or from --ask-become-pass on stdin. A wrong
password and a user sudo refuses are those hosts' one-line failures while the others go on, and the password is
in no output (text, --json, stderr) nor on any command line on the host (`ps`). Weights pushed over SFTP land as
root, a command's own stdin reaches it intact behind the password line, the docker SDK reaches the engine
through sudo's dial-stdio, and a whole `tritonops deploy` as deployer serves.

Its own lab (a light host, and a full one with a Docker engine: prefix tritonops-labbecome, ports 22500+, state
in $TMPDIR/tritonops-labbecome), so the shared test lab is left as it is; sudo (Debian's .deb, fetched once
with `apt-get download` into the lab cache) and the users are added when the module starts. Torn down at the
end unless TRITONOPS_LAB_KEEP is set.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import requests
import yaml

from tritonops.deploy.lock import LockOwner, acquire
from tritonops.image.docker_ssh import docker_client
from tritonops.lab.image_specs import TRITON_TAG
from tritonops.lab import api
from tritonops.lab.testing import test_lab_port_base, test_lab_prefix
from tritonops.lab.defaults import default_cache_dir
from tritonops.lab.request import HostSpec, LabRequest
from tritonops.transport.become import BecomeTransport
from tritonops.transport.sessions import open_transport
from tritonops.weights.transfer import PushFiles, PushItem

PREFIX = test_lab_prefix("become")
PORT_BASE = test_lab_port_base(200)
HOST = "b-light"
FULL = "b-full"  # a host with a Docker engine (the docker SDK through sudo)
PASSWORD = "violet-ostrich-42"  # deployer's; no redaction pattern would hide it: any leak fails the tests
NOSUDO_PASSWORD = "plain-parrot-77"
ROOT = "/opt/tritonops"
DEPLOYMENT = "dep-become"

SETUP = f"""set -e
command -v sudo >/dev/null || dpkg -i /tmp/sudo.deb >/dev/null
for user in deployer opsbot nosudo; do
  id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
  mkdir -p "/home/$user/.ssh" && cp /root/.ssh/authorized_keys "/home/$user/.ssh/"
  chown -R "$user:" "/home/$user/.ssh" && chmod 700 "/home/$user/.ssh"
done
chpasswd <<'EOF'
deployer:{PASSWORD}
nosudo:{NOSUDO_PASSWORD}
opsbot:{uuid.uuid4().hex}
EOF
echo 'deployer ALL=(ALL:ALL) ALL' > /etc/sudoers.d/deployer
echo 'opsbot ALL=(ALL:ALL) NOPASSWD: ALL' > /etc/sudoers.d/opsbot
chmod 440 /etc/sudoers.d/deployer /etc/sudoers.d/opsbot
"""


def sudo_deb() -> Path:
    """Debian's sudo package, as the lab hosts' Debian 12 installs it (downloaded once into the lab cache)."""
    folder = default_cache_dir() / "debs"
    folder.mkdir(parents=True, exist_ok=True)
    found = sorted(folder.glob("sudo_*.deb"))
    if not found:
        subprocess.run(["apt-get", "download", "sudo"], cwd=folder, check=True, capture_output=True, timeout=300)
        found = sorted(folder.glob("sudo_*.deb"))
    return found[-1]


STATE_DIR = Path(tempfile.gettempdir()) / PREFIX


def lab_up(*hosts: HostSpec):
    """The become lab with `hosts`, each with sudo and the three users."""
    state = api.up(LabRequest(hosts), state_dir=STATE_DIR, name_prefix=PREFIX, port_base=PORT_BASE)
    if state.results.failed:
        pytest.fail("lab up failed: " + "; ".join(f"{r.host}: {r.msg}" for r in state.results.failed))
    for host in hosts:
        as_root = lambda command, stdin: subprocess.run(state.ssh_argv(host.name, command), input=stdin,  # noqa: E731
                                                        capture_output=True, timeout=120)
        copied = as_root("cat > /tmp/sudo.deb", sudo_deb().read_bytes())
        made = as_root("bash -s", SETUP.encode())
        assert copied.returncode == 0 and made.returncode == 0, made.stderr
    return state


@pytest.fixture(scope="module")
def become_lab():
    yield lab_up(HostSpec(HOST, "h200x2", "light"), HostSpec(FULL, "2080ti", "full"))
    if not os.environ.get("TRITONOPS_LAB_KEEP"):
        api.down(state_dir=STATE_DIR, name_prefix=PREFIX)


def root(state, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(state.ssh_argv(HOST, command), capture_output=True, text=True, timeout=120)


def write_inventory(state, path: Path, hosts: dict) -> str:
    """`hosts`: name -> its variables, each reaching the one lab host (as whichever user it says)."""
    h = state.host(HOST)
    path.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_host": h.address, "ansible_port": h.port, "ansible_ssh_private_key_file": str(state.key_file),
                 "tritonops_known_hosts_file": str(state.known_hosts_file), "tritonops_deployment": DEPLOYMENT,
                 "tritonops_root": ROOT},
        "hosts": hosts}}))
    return str(path)


def tritonops(*argv, stdin: str = "") -> tuple[int, str, str]:
    """The CLI in a process of its own, without a terminal (getpass then reads stdin)."""
    done = subprocess.run([sys.executable, "-m", "tritonops", *argv], input=stdin, capture_output=True, text=True,
                          timeout=300, start_new_session=True, env={**os.environ, "COLUMNS": "400"})
    return done.returncode, done.stdout, done.stderr


def place_lock(state) -> LockOwner:
    other = LockOwner(uuid.uuid4().hex, "alice", "ctl-9", 4242, "deploy",
                      time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    transport = open_transport(state.connection(HOST))  # as root
    try:
        root(state, f"rm -f {ROOT}/{DEPLOYMENT}/lock")
        assert acquire(transport, f"{ROOT}/{DEPLOYMENT}", other).acquired
    finally:
        transport.close()
    assert root(state, f"stat -c %U {ROOT}/{DEPLOYMENT}").stdout.strip() == "root"
    return other


DEPLOYER = {"ansible_user": "deployer", "ansible_become": True}


def test_a_lock_only_root_can_remove_is_released_with_become_and_refused_hosts_fail_alone(become_lab, tmp_path):
    place_lock(become_lab)
    plain = write_inventory(become_lab, tmp_path / "plain.yml", {"d-plain": {"ansible_user": "deployer"}})
    code, out, _ = tritonops("lock", "release", "-i", plain, "--force", "alice@ctl-9", "--audit-log", "none", "--json")
    (row,) = json.loads(out)["results"]
    assert code == 2 and row["status"] == "failed"  # deployer on its own may not touch /opt/tritonops
    assert root(become_lab, f"test -e {ROOT}/{DEPLOYMENT}/lock").returncode == 0

    inventory = write_inventory(become_lab, tmp_path / "hosts.yml", {
        "d-ok": {**DEPLOYER, "ansible_become_password": PASSWORD},
        "d-wrong": {**DEPLOYER, "ansible_become_password": "not-" + PASSWORD},
        "d-nosudo": {"ansible_user": "nosudo", "ansible_become": True, "ansible_become_password": NOSUDO_PASSWORD},
    })
    code, out, err = tritonops("lock", "release", "-i", inventory, "--force", "alice@ctl-9", "--audit-log", "none",
                               "--json")
    results = {r["host"]: r for r in json.loads(out)["results"]}
    assert code == 2 and results["d-ok"]["status"] == "changed", results
    assert root(become_lab, f"test -e {ROOT}/{DEPLOYMENT}/lock").returncode == 1
    assert (results["d-wrong"]["status"], results["d-wrong"]["msg"]) == (
        "failed", "d-wrong: become root with sudo failed: sudo refused the become password "
                  "(ansible_become_password / --ask-become-pass)")
    assert (results["d-nosudo"]["status"], results["d-nosudo"]["msg"]) == (
        "failed", "d-nosudo: become root with sudo failed: the login user may not run commands as root with sudo "
                  "(nosudo is not in the sudoers file.)")
    assert PASSWORD not in out + err and NOSUDO_PASSWORD not in out + err

    code, text, err = tritonops("probe", "-i", inventory)  # the table, not JSON: no password there either
    said = " ".join(text.replace("│", " ").split())  # the note column's lines run on
    assert code == 2 and "refused the become password" in said and "may not run commands" in said
    assert [line.split()[1:4] for line in text.splitlines() if line.startswith("│ d-ok")] == [["d-ok", "│", "ok"]]
    assert PASSWORD not in text + err and NOSUDO_PASSWORD not in text + err


def test_probe_with_the_password_typed_at_ask_become_pass(become_lab, tmp_path):
    inventory = write_inventory(become_lab, tmp_path / "hosts.yml", {"d-asked": DEPLOYER})
    code, out, err = tritonops("probe", "-i", inventory, "--json")
    (row,) = json.loads(out)["results"]
    assert code == 2 and row["msg"] == "d-asked: become root with sudo failed: sudo needs a password here: set " \
                                       "ansible_become_password or pass --ask-become-pass"

    code, out, err = tritonops("probe", "-i", inventory, "--json", "--ask-become-pass", stdin=PASSWORD + "\n")
    (row,) = json.loads(out)["results"]
    assert code == 0 and row["status"] == "ok", row
    assert PASSWORD not in out + err

    code, out, err = tritonops("lock", "status", "-i", inventory, "--json", "-K", stdin=PASSWORD + "\n")
    (row,) = json.loads(out)["results"]  # a command reading its inputs as a deploy does (run_inputs)
    assert code == 0 and row["status"] == "ok" and row["payload"]["held"] is False, row
    assert PASSWORD not in out + err

    code, out, err = tritonops("probe", "-i", inventory, "--json", "-K", stdin="wrong-" + PASSWORD + "\n")
    assert code == 2 and "sudo refused the become password" in json.loads(out)["results"][0]["msg"]
    assert PASSWORD not in out + err


def test_commands_stdin_and_sftp_run_as_root_and_the_password_is_on_no_command_line(become_lab, tmp_path):
    spec = replace(become_lab.connection(HOST), user="deployer", become_user="root", become_password=PASSWORD)
    transport = open_transport(spec)
    try:
        assert isinstance(transport, BecomeTransport)
        assert transport.run("id -un").stdout == "root\n"
        processes = transport.run("ps -eo args")  # while sudo and its sh run, with the password sent
        assert "sudo -k -S -p  -u root -- /bin/sh -c ps -eo args" in processes.stdout
        assert PASSWORD not in processes.stdout + processes.stderr
        payload = os.urandom(300_000) + b"\nno trailing newline"
        assert transport.run("sha256sum", stdin=payload).stdout.split()[0] == \
            hashlib.sha256(payload).hexdigest()  # behind the password line, byte for byte

        source = tmp_path / "weights.bin"
        source.write_bytes(os.urandom(2_000_000))
        staging = "/opt/tritonops-become/models/.tiny.partial"
        root(become_lab, "rm -rf /opt/tritonops-become && mkdir -p /opt/tritonops-become/models")
        PushFiles(staging, (PushItem("sub/weights.bin", str(source), source.stat().st_size),)).run_on(transport)
        landed = root(become_lab, f"stat -c '%U %s' {staging}/sub/weights.bin; sha256sum {staging}/sub/weights.bin")
        owner_size, digest = landed.stdout.splitlines()
        assert owner_size == f"root {source.stat().st_size}"
        assert digest.split()[0] == hashlib.sha256(source.read_bytes()).hexdigest()
    finally:
        transport.close()


def test_sudo_without_a_password_is_used_as_it_is(become_lab):
    spec = replace(become_lab.connection(HOST), user="opsbot", become_user="deployer")
    transport = open_transport(spec)
    try:
        assert transport.run("id -un; echo $HOME").stdout.splitlines()[0] == "deployer"
        assert transport.run("cat", stdin=b"as it came").stdout == "as it came"
    finally:
        transport.close()


def test_the_docker_engine_is_reached_through_sudo_on_channels_that_keep_the_password_off_ps(become_lab):
    plain = replace(become_lab.connection(FULL), user="deployer")
    transport = open_transport(plain)
    try:  # deployer is not in the docker group: its own dial-stdio is refused by the engine's socket
        with pytest.raises(requests.ConnectionError):
            docker_client(transport, timeout=30).version()
    finally:
        transport.close()

    transport = open_transport(replace(plain, become_user="root", become_password=PASSWORD))
    try:
        client = docker_client(transport, timeout=60)
        assert client.version()["ApiVersion"]
        assert any(TRITON_TAG in image.tags for image in client.images.list())
        for _ in range(5):  # kept-alive channels reused, new ones opened through sudo as needed
            client.containers.list(all=True)
        processes = subprocess.run(become_lab.ssh_argv(FULL, "ps -eo user,args"), capture_output=True, text=True,
                                   timeout=60).stdout
        # the kept-alive channels' sudo, the password long sent and nowhere on its command line
        assert "sudo -k -S -p  -u root -- /bin/sh -c docker system dial-stdio" in processes, processes
        assert PASSWORD not in processes
        client.close()
    finally:
        transport.close()


def deploy_inventory(state, path: Path) -> str:
    """The lab's full host as `s1`, reached as deployer with become, serving the lab's model on ports of its own."""
    lab = yaml.safe_load(state.inventory_file.read_text())["all"]["children"]["lab"]["children"]["lab_full"]
    full = state.host(FULL)
    path.write_text(yaml.safe_dump({"all": {
        "vars": {**lab["vars"], "tritonops_build_host": "s1", **DEPLOYER, "ansible_become_password": PASSWORD,
                 "ansible_ssh_private_key_file": str(state.key_file),
                 "tritonops_known_hosts_file": str(state.known_hosts_file)},
        "hosts": {"s1": {"ansible_host": full.address, "ansible_port": full.port, "tritonops_deployment": DEPLOYMENT,
                         "tritonops_model": lab["hosts"][FULL].get("tritonops_model") or lab["vars"]["tritonops_model"],
                         "tritonops_http_port": 18900, "tritonops_grpc_port": 18901,
                         "tritonops_metrics_port": 18902}}}}))
    return str(path)


def test_a_deploy_as_deployer_with_become_serves_and_no_process_on_the_host_shows_the_password(become_lab, tmp_path):
    as_root = lambda command: subprocess.run(become_lab.ssh_argv(FULL, command), capture_output=True,  # noqa: E731
                                             text=True, timeout=120)
    clean = f"docker rm -f tritonops-{DEPLOYMENT} >/dev/null 2>&1; rm -rf {ROOT}/{DEPLOYMENT}"
    as_root(clean)
    inventory = deploy_inventory(become_lab, tmp_path / "hosts.yml")
    samples, done = [], threading.Event()

    def sample_ps():  # every process's command line on the host, as often as ssh allows, while the deploy runs
        while not done.is_set():
            samples.append(as_root("ps -eo args").stdout)

    sampler = threading.Thread(target=sample_ps)
    sampler.start()
    try:
        code, out, err = tritonops("deploy", "-i", inventory, "--audit-log", "none", "--json")
    finally:
        done.set()
        sampler.join()
    try:
        report = json.loads(out)
        assert code == 0, [r["msg"] for r in report["results"] if r["status"] == "failed"]
        assert PASSWORD not in out + err
        assert any("sudo -k -S -p  -u root --" in sample for sample in samples)  # the sampler saw the run
        assert not [sample for sample in samples if PASSWORD in sample]
        assert as_root(f"stat -c %U {ROOT}/{DEPLOYMENT}/current/release.json").stdout.strip() == "root"
        code, out, err = tritonops("status", "-i", inventory, "--json")
        (row,) = json.loads(out)["results"]
        assert code == 0 and row["status"] == "ok", row
    finally:
        as_root(clean)
