"""A real Ray cluster across two full lab hosts (issue #28), started with tritonops' node builders
(tritonops.serving.ray_node) over real SSH and each host's own Docker engine, from the lab's vllm_env
image (built by tritonops from the lab's package index as for any cluster member: `pip install vllm` and the
Ray of `tritonops_ray_requirement`, real Ray from its PyPI wheels; the stand-in vllm, like vLLM 0.25, requires
none).

- head first, then a worker with the wrong token (refused: the head never lists it), then the worker
  with the cluster's token: the head sees both nodes, each with its simulated GPU as a Ray `GPU`;
- the lab engine at pipeline parallel 2 / tensor parallel 1 with `distributed_executor_backend: "ray"`
  in the head's container: refused while the head is alone (one GPU for two stages); with both nodes, a
  real STRICT_SPREAD placement group, one stage actor on each host, then a generate request served; a
  second engine while the first holds the GPUs: its placement group times out, in vLLM's words.
- then `tritonops deploy` of the two hosts as one cluster (`tritonops_cluster`): a model sized to PP 2 / TP 1,
  each member's Ray node, Triton on the head as the pipeline's Ray driver answering a generate request; a
  second release and `tritonops rollback` move both members together; the worker's node killed, `status` fails
  both rows naming the worker, the next deploy heals the pipeline and one more changes nothing.
What is staged: the GPUs (Ray resources and the lab's profile files), the engine (no NCCL, no layers
split, no activations between stages). What is real: Ray (GCS, raylets, token auth, placement groups,
actors across hosts), Docker, SSH, the image build.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from tritonops.image.api import build_images
from tritonops.inventory import load_inventory
from tritonops.lab import api as lab_api
from tritonops.lab.testing import test_lab_port_base, test_lab_prefix
from tritonops.lab.hub.model import tiny_model
from tritonops.lab.request import HostSpec, LabRequest
from tritonops.lab.wheelhouse.ray_wheels import LAB_RAY_REQUIREMENT
from tritonops.serving.ray_node import RayNodeSpec, run_argv
from tritonops.serving.ray_version import RAY_VERSION
from tritonops.tarball import tar_bytes
from tritonops.transport.sessions import open_transport

pytestmark = pytest.mark.lab

PREFIX = test_lab_prefix("ray")
PORT_BASE = test_lab_port_base(400)
HEAD, WORKER = "ray-head", "ray-worker"
TOKEN_DIR = "/etc/tritonops-labray"
TOKEN, WRONG_TOKEN = f"{TOKEN_DIR}/ray-token", f"{TOKEN_DIR}/wrong-token"
NODE = "tritonops-labray-node"
MODEL_DIR = "/tmp/labray-tiny"
OBJECT_STORE = 80 << 20  # the lab hosts' /dev/shm is small, and two cores serve everyone
TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="module")
def lab():
    state_dir = os.environ.get("TRITONOPS_RAY_LAB_STATE", Path(tempfile.gettempdir()) / PREFIX)
    started = time.monotonic()
    state = lab_api.up(LabRequest((HostSpec(HEAD, "2080ti", "full"), HostSpec(WORKER, "2080ti", "full"))),
                       state_dir=state_dir, name_prefix=PREFIX, port_base=PORT_BASE)
    TIMINGS["lab up"] = time.monotonic() - started
    if state.results.failed:
        lab_api.down(state_dir=state_dir, name_prefix=PREFIX)
        pytest.fail("lab up failed: " + "; ".join(f"{r.host}: {r.msg}" for r in state.results.failed))
    yield state
    if not os.environ.get("TRITONOPS_LAB_KEEP"):
        lab_api.down(state_dir=state_dir, name_prefix=PREFIX)
    print("\nray lab timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in TIMINGS.items()))


@pytest.fixture(scope="module")
def hosts(lab):
    transports = {name: open_transport(lab.connection(name)) for name in (HEAD, WORKER)}
    yield transports
    for transport in transports.values():
        transport.run(f"docker rm -f {NODE} {NODE}-wrong >/dev/null 2>&1; true", timeout=60)
        transport.run(f"docker rm -f $(docker ps -aq --filter label=tritonops.deployment={DEPLOYMENT}) "
                      f"$(docker ps -aq --filter label=tritonops.ray={DEPLOYMENT}) >/dev/null 2>&1; "
                      f"rm -rf {ROOT}/{DEPLOYMENT}", timeout=120)
        transport.close()


@pytest.fixture(scope="module")
def image(lab, tmp_path_factory):
    """The vllm_env image of the two hosts as members of a cluster (Ray beside vLLM), built once and brought to
    both hosts."""
    members = tmp_path_factory.mktemp("ray-inventory") / "cluster.yml"
    members.write_text(f"all:\n  vars:\n    tritonops_cluster: labray\n"
                       f"    tritonops_ray_requirement: {LAB_RAY_REQUIREMENT}\n")
    started = time.monotonic()
    report = build_images(load_inventory([str(lab.inventory_file), str(members)]).select(None))
    TIMINGS["image build"] = time.monotonic() - started
    images = {r.host: r for r in report.results}
    assert set(images) == {HEAD, WORKER} and all(r.status in ("ok", "changed") for r in images.values()), \
        [(r.host, r.status, r.msg) for r in report.results]
    (image_id,) = {r.payload["image_id"] for r in images.values()}
    return image_id


def _run(transport, command: str, timeout: float = 120.0, stdin: bytes | None = None) -> str:
    result = transport.run(command, stdin=stdin, timeout=timeout)
    assert result.ok, f"{transport.name}: {command!r} failed: {result.tail()}"
    return result.stdout


def _spec(lab, image: str, role: str, token: str = TOKEN, container: str = NODE) -> RayNodeSpec:
    head_ip = lab.host(HEAD).network_address
    name = HEAD if role == "head" else WORKER
    return RayNodeSpec(role=role, node_ip=lab.host(name).network_address, image=image, token_file=token,
                       num_gpus=1, head_ip=None if role == "head" else head_ip, object_store_bytes=OBJECT_STORE,
                       container=container)


NODES = ("import json, ray; ray.init(address='auto', logging_level='ERROR', log_to_driver=False); "
         "print(json.dumps([{'ip': n['NodeManagerAddress'], 'gpus': n['Resources'].get('GPU', 0)} "
         "for n in ray.nodes() if n['Alive']]))")


def _nodes(head) -> list[dict] | None:
    """The live nodes as the head's Ray lists them (None while no Ray answers there yet)."""
    result = head.run(shlex.join(("docker", "exec", NODE, "python3", "-c", NODES)), timeout=90)
    return json.loads(result.stdout.strip().splitlines()[-1]) if result.ok else None


def _wait_nodes(head, count: int, timeout_s: float = 120.0) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while True:
        nodes = _nodes(head)
        if (nodes is not None and len(nodes) >= count) or time.monotonic() > deadline:
            assert nodes is not None, _run(head, f"docker logs --tail 40 {NODE} 2>&1")
            return nodes
        time.sleep(2)


ENGINE = """
import asyncio, json, vllm
from vllm import AsyncEngineArgs, AsyncLLMEngine, SamplingParams

async def main():
    engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(
        model={model!r}, pipeline_parallel_size=2, tensor_parallel_size=1,
        distributed_executor_backend="ray", gpu_memory_utilization=0.5))
    text = ""
    async for out in engine.generate("Hello Ray", SamplingParams(max_tokens=8), "r1"):
        text = out.outputs[0].text
    print("STAGES " + json.dumps(engine._core.ray_stages))
    print("TEXT " + json.dumps(text))

asyncio.run(main())
"""


BUSY = """
import os, vllm
from vllm import AsyncEngineArgs, AsyncLLMEngine

args = dict(model={model!r}, pipeline_parallel_size=2, distributed_executor_backend="ray", gpu_memory_utilization=0.3)
first = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(**args))  # holds a GPU on each host
os.environ["TRITONOPS_LAB_RAY_PG_WAIT_S"] = "3"
try:
    AsyncLLMEngine.from_engine_args(AsyncEngineArgs(**args))
except ValueError as err:
    print("REFUSED " + str(err))
"""


def test_two_hosts_form_a_token_authenticated_ray_cluster_and_the_engine_places_a_stage_on_each(lab, hosts, image):
    head, worker = hosts[HEAD], hosts[WORKER]
    token = secrets.token_hex(32)
    for transport in (head, worker):
        _run(transport, f"install -d -m 700 {TOKEN_DIR} && umask 077 && cat > {TOKEN} && "
                        f"head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > {WRONG_TOKEN}",
             stdin=token.encode())
    version = _run(head, shlex.join(("docker", "run", "--rm", image, "python3", "-c",
                                     "import ray; print(ray.__version__)")), timeout=120)
    assert version.strip().splitlines()[-1] == RAY_VERSION

    started = time.monotonic()
    _run(head, shlex.join(run_argv(_spec(lab, image, "head"))))
    assert [n["ip"] for n in _wait_nodes(head, 1)] == [lab.host(HEAD).network_address]
    TIMINGS["head up"] = time.monotonic() - started
    # The token is in no command line and no environment of the container: only its file's path is.
    inspect = _run(head, shlex.join(("docker", "inspect", NODE)))
    assert token not in inspect and f"RAY_AUTH_TOKEN_PATH={TOKEN}" in inspect

    # A worker with the wrong token: the head refuses it, the worker's ray start gives up.
    _run(worker, shlex.join(run_argv(_spec(lab, image, "worker", token=WRONG_TOKEN, container=f"{NODE}-wrong"))))
    deadline, state = time.monotonic() + 120, ""
    while time.monotonic() < deadline:
        state = _run(worker, f"docker inspect -f '{{{{.State.Running}}}} {{{{.State.ExitCode}}}}' {NODE}-wrong").strip()
        if state.startswith("false"):
            break
        time.sleep(2)
    refused_log = _run(worker, f"docker logs --tail 20 {NODE}-wrong 2>&1")
    assert state.startswith("false") and state != "false 0", (state, refused_log)
    assert "AuthenticationError" in refused_log and "token is missing or incorrect" in refused_log, refused_log
    assert [n["ip"] for n in _nodes(head)] == [lab.host(HEAD).network_address]
    _run(worker, f"docker rm -f {NODE}-wrong")

    # The engine at PP 2 while the head is alone: Ray has one GPU, the pipeline needs two.
    model = tar_bytes({name: data for name, data in tiny_model().items()})
    _run(head, shlex.join(("docker", "exec", "-i", NODE, "sh", "-c", f"mkdir -p {MODEL_DIR} && tar -xf - -C "
                           f"{MODEL_DIR}")), stdin=model)
    alone = head.run(shlex.join(("docker", "exec", NODE, "python3", "-c", ENGINE.format(model=MODEL_DIR))),
                     timeout=240)
    assert not alone.ok and "The number of required GPUs exceeds the total number of available GPUs in the " \
                            "placement group. (world size 2, 1 GPU(s) in the Ray cluster)" in alone.stdout + alone.stderr

    started = time.monotonic()
    _run(worker, shlex.join(run_argv(_spec(lab, image, "worker"))))
    nodes = _wait_nodes(head, 2)
    TIMINGS["worker joined"] = time.monotonic() - started
    assert sorted((n["ip"], n["gpus"]) for n in nodes) == sorted(
        [(lab.host(HEAD).network_address, 1.0), (lab.host(WORKER).network_address, 1.0)])

    started = time.monotonic()
    out = _run(head, shlex.join(("docker", "exec", NODE, "python3", "-c", ENGINE.format(model=MODEL_DIR))),
               timeout=240)
    TIMINGS["engine on 2 stages"] = time.monotonic() - started
    stages = json.loads(next(line for line in out.splitlines() if line.startswith("STAGES "))[7:])
    addresses = sorted([lab.host(HEAD).network_address, lab.host(WORKER).network_address])
    assert [s["stage"] for s in stages] == [0, 1]
    assert sorted(s["ip"] for s in stages) == addresses  # one stage on each host (STRICT_SPREAD)
    assert all(s["vllm_host_ip"] == s["ip"] and len(s["gpu_ids"]) == 1 for s in stages)
    assert len({s["node_id"] for s in stages}) == 2
    for stage in stages:
        assert f"Pipeline stage {stage['stage']} (ranks {stage['stage']}-{stage['stage']}) on node " \
               f"{stage['node_id']} ip {stage['ip']}" in out
    assert "pipeline_parallel_size=2" in out
    assert json.loads(next(line for line in out.splitlines() if line.startswith("TEXT "))[5:])

    # Enough GPUs in the cluster, but held by another engine: the placement group never becomes ready.
    busy = _run(head, shlex.join(("docker", "exec", NODE, "python3", "-c", BUSY.format(model=MODEL_DIR))),
                timeout=240)
    assert "REFUSED Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0}, {'GPU': 1.0}] " \
           "within 3 seconds. See `ray status` and `ray list nodes`" in busy, busy


DEPLOYMENT = "dep-pipe"
ROOT = "/opt/tritonops"
RAY_NODE = f"tritonops-{DEPLOYMENT}-ray"
TRITON = f"tritonops-{DEPLOYMENT}"


def _cluster_inventory(lab, path) -> str:
    """The lab's two hosts as one cluster (`tritonops_cluster`), each reached by the other at its lab-network
    address, serving DEPLOYMENT with the lab's model for the 2080 Ti."""
    data = {"all": {"vars": {"tritonops_cluster": "labray", "tritonops_deployment": DEPLOYMENT,
                             "tritonops_ray_requirement": LAB_RAY_REQUIREMENT,
                             "tritonops_ray_object_store_bytes": OBJECT_STORE},
                    "hosts": {name: {"tritonops_node_address": lab.host(name).network_address}
                              for name in (HEAD, WORKER)}}}
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _cli(capsys, *argv):
    from tritonops.cli.main import main

    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def _failures(report) -> list:
    return [(r["host"], r["task"], r["msg"]) for r in report["results"] if r["status"] in ("failed", "unreachable")]


def _current(transport) -> str:
    return _run(transport, f"readlink {ROOT}/{DEPLOYMENT}/current").strip().rsplit("/", 1)[-1]


def _generate(head) -> str:
    out = _run(head, "curl -s -m 60 -X POST localhost:8000/v2/models/vllm_model/generate "
                     "-d '{\"text_input\": \"hello\", \"parameters\": {\"max_tokens\": 4}}'", timeout=90)
    return json.loads(out)["text_output"]


def test_a_pipeline_deploys_across_two_hosts_serves_rolls_back_and_heals_after_a_worker_dies(lab, hosts, image,
                                                                                            capsys, tmp_path):
    head, worker = hosts[HEAD], hosts[WORKER]
    for transport in (head, worker):  # the first test's hand-made nodes hold Ray's ports
        transport.run(f"docker rm -f {NODE} {NODE}-wrong >/dev/null 2>&1; true", timeout=60)
    inventory = ["-i", str(lab.inventory_file), "-i", _cluster_inventory(lab, tmp_path / "cluster.yml")]

    code, checked = _cli(capsys, "deploy", *inventory, "--check", "--diff")  # says what it would do, does nothing
    assert code == 0, _failures(checked)
    assert not head.run(f"docker inspect {RAY_NODE}", timeout=60).ok and not worker.run(f"ls {ROOT}/{DEPLOYMENT}/ray",
                                                                                        timeout=60).ok
    started = time.monotonic()
    code, first = _cli(capsys, "deploy", *inventory)
    TIMINGS["pipeline deploy"] = time.monotonic() - started
    assert code == 0, _failures(first)
    plan = next(r for r in first["results"] if r["task"] == "plan" and r["host"] == HEAD)
    assert "TP 1" in plan["msg"]
    # the head runs its Ray node and Triton (the pipeline's driver); the worker its Ray node only
    assert _run(head, f"docker inspect -f '{{{{.State.Running}}}}' {RAY_NODE} {TRITON}").split() == ["true", "true"]
    assert _run(worker, f"docker inspect -f '{{{{.State.Running}}}}' {RAY_NODE}").split() == ["true"]
    assert not worker.run(f"docker inspect {TRITON}", timeout=60).ok
    assert _generate(head)
    nodes = _wait_nodes_of(head, 2)
    assert sorted(n["ip"] for n in nodes) == sorted(lab.host(h).network_address for h in (HEAD, WORKER))
    # every member's release says the cluster; the token is the same file (0600) on both, and in no output
    releases = {}
    for name, transport in ((HEAD, head), (WORKER, worker)):
        releases[name] = _current(transport)
        document = json.loads(_run(transport, f"cat {ROOT}/{DEPLOYMENT}/current/release.json"))
        cluster = document["serve"]["cluster"]
        assert (cluster["head"], cluster["workers"], cluster["pipeline_parallel_size"], cluster["host"]) == \
            (HEAD, [WORKER], 2, name)
        assert _run(transport, f"stat -c %a {ROOT}/{DEPLOYMENT}/ray/token").strip() == "600"
    tokens = {_run(t, f"sha256sum {ROOT}/{DEPLOYMENT}/ray/token").split()[0] for t in (head, worker)}
    assert len(tokens) == 1
    token = _run(head, f"cat {ROOT}/{DEPLOYMENT}/ray/token").strip()
    assert token not in json.dumps(first) and token not in _run(head, f"docker inspect {RAY_NODE} {TRITON}")

    # a second release (another engine setting): both members switch; the rollback brings both back
    code, second = _cli(capsys, "deploy", *inventory, "-e", "tritonops_max_num_seqs=8")
    assert code == 0, _failures(second)
    assert all(_current(t) != releases[n] for n, t in ((HEAD, head), (WORKER, worker)))
    started = time.monotonic()
    code, back = _cli(capsys, "rollback", *inventory)
    TIMINGS["pipeline rollback"] = time.monotonic() - started
    assert code == 0, _failures(back)
    assert {n: _current(t) for n, t in ((HEAD, head), (WORKER, worker))} == releases
    assert _generate(head)

    # the worker's Ray node dies: status names it, the next deploy heals the pipeline
    _run(worker, f"docker kill {RAY_NODE}")
    deadline = time.monotonic() + 120  # Ray marks a node dead once its health checks fail (seconds)
    while True:
        code, status = _cli(capsys, "status", *inventory)
        rows = {r["host"]: r for r in status["results"]}
        if WORKER in rows[HEAD]["msg"] or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert code != 0 and rows[WORKER]["status"] == "failed" and "Ray node" in rows[WORKER]["msg"], rows
    assert WORKER in rows[HEAD]["msg"] and rows[HEAD]["status"] == "failed", rows[HEAD]
    started = time.monotonic()
    code, healed = _cli(capsys, "deploy", *inventory)
    TIMINGS["pipeline healed"] = time.monotonic() - started
    assert code == 0, _failures(healed)
    served = {r["host"]: r for r in healed["results"] if r["task"].startswith("Triton serves")}
    assert served[WORKER]["status"] == "changed" and "its Ray node started and joined" in served[WORKER]["msg"]
    # the head's engine had lost its stage: its re-gate failed and Triton started again on the same release
    assert served[HEAD]["status"] == "changed" and _current(head) == releases[HEAD]
    assert _generate(head)
    assert len(_wait_nodes_of(head, 2)) == 2
    code, again = _cli(capsys, "deploy", *inventory)  # nothing to do: every member says ok
    assert code == 0 and {r["host"]: r["status"] for r in again["results"]
                          if r["task"].startswith("Triton serves")} == {HEAD: "ok", WORKER: "ok"}
    code, status = _cli(capsys, "status", *inventory)
    assert code == 0, [(r["host"], r["msg"]) for r in status["results"]]


def _wait_nodes_of(head, count: int) -> list[dict]:
    deadline = time.monotonic() + 60
    while True:
        result = head.run(shlex.join(("docker", "exec", RAY_NODE, "python3", "-c", NODES)), timeout=90)
        nodes = json.loads(result.stdout.strip().splitlines()[-1]) if result.ok else []
        if len(nodes) >= count or time.monotonic() > deadline:
            return nodes
        time.sleep(2)
