"""Deploy, part 2 on a real lab host: the release's Triton container (real tritonserver 2.51, the
image's backend, the lab's CPU engine) starts, passes the gate (live, ready, a generate that returns
text) and `current` switches; a no-op redeploy restarts nothing; a release the engine rejects is
rolled back with its reason while the previous release serves again (an unknown engine argument;
a context forced past what the simulated card holds); `rollback` goes back; `status`
reports it all. One deployment (`dep-serve`) on the test lab's full host.
"""

import json
import subprocess

import jsonschema
import pytest
import yaml

from tests.support.result_schema import SCHEMA as RESULT_SCHEMA
from tritonops.cli.main import main
from tritonops.lab.hub.model import tiny_model
from tritonops.lab.testing import FULL_2080TI

ROOT = "/opt/tritonops"
DEPLOYMENT = "dep-serve"
CONTAINER = f"tritonops-{DEPLOYMENT}"


def full_host_inventory(lab, path, deployment: str, **host_vars) -> str:
    """An inventory of the test lab's full host as `s1` (it builds its own image), serving `deployment` with
    the lab's model for it and `host_vars`."""
    lab_vars = yaml.safe_load(lab.inventory_file.read_text())
    full_vars = dict(lab_vars["all"]["children"]["lab"]["children"]["lab_full"]["vars"])
    full_vars["tritonops_build_host"] = "s1"
    full = lab.host(FULL_2080TI)
    own = lab_vars["all"]["children"]["lab"]["children"]["lab_full"]["hosts"][FULL_2080TI]
    data = {"all": {
        "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(lab.key_file),
                 "tritonops_known_hosts_file": str(lab.known_hosts_file), **full_vars},
        "hosts": {"s1": {"ansible_host": full.address, "ansible_port": full.port, "tritonops_deployment": deployment,
                         "tritonops_model": own.get("tritonops_model") or full_vars["tritonops_model"], **host_vars}},
    }}
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture(scope="module")
def inventory(lab, tmp_path_factory):
    return full_host_inventory(lab, tmp_path_factory.mktemp("serve") / "hosts.yml", DEPLOYMENT,
                               tritonops_http_port=18000, tritonops_grpc_port=18001, tritonops_metrics_port=18002)


def full_host_shell(lab, deployment: str, timeout: float | None = None):
    """A module fixture's body (`yield from`): a shell line run on the test lab's full host (its output as text),
    with `deployment`'s containers and its folder under ROOT removed before the module's tests and after them."""
    def run(command: str) -> subprocess.CompletedProcess:
        return subprocess.run(lab.ssh_argv(FULL_2080TI, command), capture_output=True, text=True, timeout=timeout)

    wipe = (f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={deployment}) 2>/dev/null; "
            f"rm -rf {ROOT}/{deployment}")
    run(wipe)
    yield run
    run(wipe)


@pytest.fixture(scope="module")
def clean(lab, inventory):
    yield from full_host_shell(lab, DEPLOYMENT)


def cli(capsys, *argv):
    code = main([*argv, "--json"])
    found = json.loads(capsys.readouterr().out)
    jsonschema.validate(found, RESULT_SCHEMA)  # every command's one result document, real payloads
    return code, found


def task(report, name_start):
    return next(r for r in report["results"] if r["task"].startswith(name_start))


def generate(clean) -> str:
    out = clean("curl -s -X POST localhost:18000/v2/models/vllm_model/generate "
                "-d '{\"text_input\": \"hello\", \"parameters\": {\"max_tokens\": 4}}'").stdout
    return json.loads(out)["text_output"]


def forced_context(tmp_path) -> dict:
    """Extra vars for a release whose context the card cannot hold: a wide model (1 MiB of KV per
    token in float16, a 32k context) whose max_model_len sizing caps near 15k on the 2080 Ti, forced
    to the model's 32k unchecked. Sizing does not see it; the engine's own arithmetic refuses it."""
    model = tmp_path / "wide-llama"
    model.mkdir()
    for name, data in tiny_model(7, hidden=4096, layers=32, heads=32, vocab=64, max_positions=32768).items():
        (model / name).write_bytes(data)
    return {"tritonops_model": str(model), "tritonops_engine_args": {"max_model_len": 32768},
            "tritonops_engine_args_unchecked": ["max_model_len"]}


def test_deploy_serves_then_a_rejected_release_rolls_back_then_rollback_and_status(capsys, inventory, clean,
                                                                                     tmp_path):
    code, first = cli(capsys, "deploy", "-i", inventory)
    assert code == 0, [r["msg"] for r in first["results"] if r["status"] == "failed"]
    assert task(first, "Triton serves")["status"] == "changed"
    assert generate(clean)
    current = clean(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip()
    record = json.loads(clean(f"cat {ROOT}/{DEPLOYMENT}/{current}/release.json").stdout)
    gate = record["gates"][-1]
    assert gate["passed"] and gate["kv_cache_tokens"]["predicted"] > 0 and gate["kv_cache_tokens"]["reported"] > 0
    started = clean(f"docker inspect --format '{{{{.State.StartedAt}}}}' {CONTAINER}").stdout

    code, again = cli(capsys, "deploy", "-i", inventory)
    assert code == 0 and task(again, "Triton serves")["status"] == "ok"  # a no-op restarts nothing
    assert clean(f"docker inspect --format '{{{{.State.StartedAt}}}}' {CONTAINER}").stdout == started

    code, bad = cli(capsys, "deploy", "-i", inventory, "-e", '{"tritonops_engine_args": {"no_such_engine_arg": 1}, '
                    '"tritonops_engine_args_unchecked": ["no_such_engine_arg"]}')
    serve = task(bad, "Triton serves")
    assert code == 2 and serve["status"] == "failed"
    assert serve["msg"].startswith("rolled back: unknown engine argument") and "no_such_engine_arg" in serve["msg"]
    assert clean(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip() == current  # not switched
    assert generate(clean)  # the previous release answers again
    assert f"{CONTAINER}--" in clean("docker ps -a --format '{{.Names}}'").stdout  # the failed one kept

    code, state = cli(capsys, "status", "-i", inventory)
    serving = state["results"][0]["payload"]
    assert code == 0 and serving["container"] == "running" and serving["ready"]
    assert serving["kv_predicted"] > 0 and serving["kv_reported"] > 0
    assert serving["models"][0]["metrics"]["requests"] >= 2

    code, forced = cli(capsys, "deploy", "-i", inventory, "-e", json.dumps(forced_context(tmp_path)))
    serve = task(forced, "Triton serves")
    assert code == 2 and serve["status"] == "failed", serve
    assert serve["msg"].startswith("rolled back: context larger than KV cache"), serve["msg"]
    assert clean(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip() == current
    assert generate(clean)  # the previous release (its own model) answers again

    code, changed = cli(capsys, "deploy", "-i", inventory, "-e", "tritonops_max_num_seqs=8")
    assert code == 0 and task(changed, "Triton serves")["status"] == "changed"
    newer = clean(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip()
    assert newer != current
    code, back = cli(capsys, "rollback", "-i", inventory)
    assert code == 0, back["results"]
    assert clean(f"readlink {ROOT}/{DEPLOYMENT}/current").stdout.strip() == current
    assert generate(clean)


def test_a_crash_after_the_gate_is_restarted_by_docker_and_status_counts_it(capsys, inventory, clean):
    from tritonops.waiting import wait_until

    code, _ = cli(capsys, "deploy", "-i", inventory)  # serving (the test above may have left it so already)
    assert code == 0
    clean(f"kill -9 $(docker inspect --format '{{{{.State.Pid}}}}' {CONTAINER})")  # the server dies under it

    def restarted_and_ready():
        code, state = cli(capsys, "status", "-i", inventory)
        serving = state["results"][0]["payload"]
        return serving if code == 0 and serving["restarts"] >= 1 and serving["ready"] else None

    serving = wait_until(restarted_and_ready, timeout_s=90, interval_s=1)
    assert serving, "Docker did not restart the container, or status did not see it"
    assert generate(clean)


def test_the_admin_apis_are_restricted_by_a_key_made_on_the_host(clean):
    key_file = f"{ROOT}/{DEPLOYMENT}/admin.key"
    assert clean(f"stat -c %a {key_file}").stdout.strip() == "600"
    key = clean(f"cat {key_file}").stdout.strip()
    index = "curl -s -o /dev/null -w '%{http_code}' -X POST localhost:18000/v2/repository/index"
    assert clean(index).stdout == "403"  # without the key
    assert clean(index.replace("curl -s", f"curl -s -H 'tritonops-admin-key: {key}'")).stdout == "200"


def test_a_gpu_another_process_holds_is_refused_before_anything_is_stopped(capsys, lab, inventory, clean):
    from tritonops.lab.api import set_gpu_faults
    from tritonops.lab.profile_file import GpuFaults, SimulatedProcess

    code, _ = cli(capsys, "deploy", "-i", inventory)  # the deployment serves
    assert code == 0
    started = clean(f"docker inspect --format '{{{{.State.StartedAt}}}}' {CONTAINER}").stdout
    intruder = clean("sleep 300 >/dev/null 2>&1 & echo $!").stdout.strip()  # a live process on the host
    set_gpu_faults(lab, FULL_2080TI, GpuFaults(processes=((0, SimulatedProcess(int(intruder), 256 << 20)),)))
    try:
        checked, check_report = cli(capsys, "deploy", "-i", inventory, "-e", "tritonops_max_num_seqs=4", "--check")
        code, report = cli(capsys, "deploy", "-i", inventory, "-e", "tritonops_max_num_seqs=4")
    finally:
        set_gpu_faults(lab, FULL_2080TI, GpuFaults())
        clean(f"kill {intruder}")
    serve = task(report, "Triton serves")
    assert code == 2 and serve["msg"] == (f"refused, nothing stopped: replica 0: GPU busy: GPU 0 is held by pid "
                                          f"{intruder} (0.2 GiB)"), serve["msg"]
    assert checked == 2 and task(check_report, "Triton serves")["msg"] == serve["msg"]  # said by --check already
    assert clean(f"docker inspect --format '{{{{.State.StartedAt}}}}' {CONTAINER}").stdout == started  # untouched
    assert generate(clean)
