"""Secrets through a whole deploy on the test lab's full host: the weights come from the lab's hub
stand-in with a token (HF_TOKEN on the controller), Triton's admin APIs are restricted with a key
made on the host, the logs are shipped to the lab's rsyslog collector. Then everything the deploy
produced is searched for both values: stdout and stderr at -vv and with --json, the controller's
audit log, the collector's file, every file under the deployment's folder on the host (but the key
file itself), `docker inspect` of every container there, and `ps` on the host sampled every 0.2 s
during the deploy.

Known limit (docs/security.md): tritonserver takes the restricted-API key only on its command line,
so the key is in the Triton process' own arguments inside its container (visible to root on the
host through /proc); the test pins that down as the only place it is, and checks that no `docker
run` line, no `docker inspect` and nothing else carries it.
"""

import json
import subprocess

import docker
import pytest
import yaml

from tritonops.cli.main import main
from tritonops.lab import collector as lab_collector
from tritonops.lab.hub import TINY_REPO, tiny_model
from tritonops.lab.defaults import default_cache_dir
from tritonops.lab.testing import FULL_2080TI, lab_hub

pytestmark = pytest.mark.lab

TOKEN = "hf_SECRETsecretSECRET_labtoken_9876543210"
DEPLOYMENT = "dep-secrets"
ROOT = f"/opt/tritonops/{DEPLOYMENT}"
PS_SAMPLES = "/tmp/tritonops-ps-samples"


@pytest.fixture(scope="module")
def hub(lab):
    with lab_hub(lab, (FULL_2080TI,), {TINY_REPO: tiny_model()}, token=TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def collector(lab):
    found = lab_collector.lab_collector(lab.state_dir, lab.prefix)
    lab_collector.up(docker.from_env(), found, default_cache_dir(), lab.state_dir / "collector-build.log")
    yield found


@pytest.fixture(scope="module")
def on_host(lab):
    def run(command: str, timeout: float = 120) -> str:
        out = subprocess.run(lab.ssh_argv(FULL_2080TI, command), capture_output=True, timeout=timeout).stdout
        return out.decode("utf-8", errors="replace")  # weights are binary
    run(f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={DEPLOYMENT}) 2>/dev/null; rm -rf {ROOT}")
    yield run
    run(f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={DEPLOYMENT}) 2>/dev/null; "
        f"rm -f {PS_SAMPLES}")


@pytest.fixture(scope="module")
def inventory(lab, hub, collector, tmp_path_factory):
    lab_vars = yaml.safe_load(lab.inventory_file.read_text())
    full = lab_vars["all"]["children"]["lab"]["children"]["lab_full"]
    host = lab.host(FULL_2080TI)
    model_dir = full["hosts"][FULL_2080TI].get("tritonops_model") or full["vars"]["tritonops_model"]
    data = {"all": {
        "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(lab.key_file),
                 "tritonops_known_hosts_file": str(lab.known_hosts_file), **full["vars"], "tritonops_build_host": "s1"},
        "hosts": {"s1": {"ansible_host": host.address, "ansible_port": host.port, "tritonops_deployment": DEPLOYMENT,
                         "tritonops_model": model_dir,  # sized from the local copy, downloaded from the hub
                         "tritonops_weights_source": "huggingface", "tritonops_weights_repo": TINY_REPO,
                         "tritonops_hf_endpoint": hub.endpoint, "tritonops_weights_runner": "host",
                         "tritonops_http_port": 18500, "tritonops_grpc_port": 18501, "tritonops_metrics_port": 18502,
                         "tritonops_bind_address": "127.0.0.1",
                         "tritonops_log_driver": "syslog", "tritonops_log_collector": collector.address}},
    }}
    path = tmp_path_factory.mktemp("secrets") / "hosts.yml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_no_secret_leaves_its_place_in_a_whole_deploy(capfd, monkeypatch, lab, hub, collector, inventory, on_host,
                                                       tmp_path):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    audit = tmp_path / "audit.log"
    sampler = subprocess.Popen(lab.ssh_argv(FULL_2080TI, f"rm -f {PS_SAMPLES}; end=$(( $(date +%s) + 600 )); "
                                            f"while [ $(date +%s) -lt $end ]; do ps -eo pid,args >> {PS_SAMPLES}; "
                                            "sleep 0.2; done"))
    try:
        code = main(["deploy", "-i", inventory, "-vv", "--audit-log", str(audit)])
        verbose = capfd.readouterr()
        assert code == 0, verbose.out[-3000:] + verbose.err[-2000:]
        code = main(["deploy", "-i", inventory, "--json", "-e", "tritonops_max_num_seqs=8", "--audit-log", str(audit)])
        as_json = capfd.readouterr()
        assert code == 0, as_json.out[-3000:]
    finally:
        sampler.terminate()
        on_host("pkill -f 'tritonops-ps-samples' ; true")
    assert hub.log.authorizations and set(hub.log.authorizations) == {f"Bearer {TOKEN}"}  # it did reach the hub
    key = on_host(f"cat {ROOT}/admin.key").strip()
    assert len(key) >= 32 and on_host(f"stat -c %a {ROOT}/admin.key").strip() == "600"
    listing = on_host(f"find {ROOT} ! -type l -printf '%m %p\\n'").splitlines()
    assert len(listing) > 10
    writable = [entry for entry in listing if int(entry.split()[0], 8) & 0o022]
    assert not writable, writable  # nothing on the host is writable by anyone but root

    produced = {
        "stdout and stderr (-vv)": verbose.out + verbose.err,
        "stdout and stderr (--json)": as_json.out + as_json.err,
        "the audit log": audit.read_text(),
        "the collector's file": collector.received_file.read_text(errors="replace"),
        "files under the deployment": on_host(f"find {ROOT} -type f ! -path {ROOT}/admin.key -print0 | "
                                              "xargs -0 cat", timeout=300),
        "docker inspect": on_host("docker inspect $(docker ps -aq)"),
    }
    assert all(produced.values()), [name for name, text in produced.items() if not text]
    for name, text in produced.items():
        assert TOKEN not in text, f"the hub token is in {name}"
        assert key not in text, f"the admin key is in {name}"
    samples = on_host(f"cat {PS_SAMPLES}", timeout=300)
    assert samples.count("PID") > 10 and TOKEN not in samples
    with_key = {line.split(None, 1)[1] for line in samples.splitlines() if key in line}
    # the only process carrying the key: tritonserver itself (its command line, as Triton takes it)
    assert with_key and all(args.startswith(f"tritonserver --model-repository={ROOT}/releases/")
                            and "--http-restricted-api=" in args for args in with_key), with_key


def test_access_is_closed_ports_on_the_configured_address_and_unload_needs_the_key(on_host):
    container = f"tritonops-{DEPLOYMENT}"
    bindings = json.loads(on_host(f"docker inspect -f '{{{{json .HostConfig.PortBindings}}}}' {container}"))
    assert {port: [b["HostIp"] for b in found] for port, found in bindings.items()} == {
        "8000/tcp": ["127.0.0.1"], "8001/tcp": ["127.0.0.1"], "8002/tcp": ["127.0.0.1"]}
    key = on_host(f"cat {ROOT}/admin.key").strip()
    unload = ("curl -s -o /dev/null -w '%{http_code}' -X POST "
              "127.0.0.1:18500/v2/repository/models/vllm_model/unload")
    ready = "curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:18500/v2/models/vllm_model/ready"
    assert on_host(unload) == "403" and on_host(ready) == "200"  # refused without the key: still serving
    # with the key the request passes the restriction and reaches Triton, which runs with model control
    # mode NONE (models are loaded at start only): it answers that, not 403
    passed = on_host(unload.replace("curl -s", f"curl -s -H 'tritonops-admin-key: {key}'"))
    assert passed not in ("403", "000", ""), passed
    index = "curl -s -o /dev/null -w '%{http_code}' -X POST 127.0.0.1:18500/v2/repository/index"
    assert on_host(index) == "403"
    assert on_host(index.replace("curl -s", f"curl -s -H 'tritonops-admin-key: {key}'")) == "200"
