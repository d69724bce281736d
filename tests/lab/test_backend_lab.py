"""The vllm_env image's backend served by the real tritonserver 2.51 on a full lab host (over SSH,
strict host keys): the image built by tritonops from the lab's package index (the stand-in vllm,
pinned 0.10.2), a model repository rendered by tritonops.render, the container started with
`docker run --gpus all` on the host's own engine.

Two servers at once on the 2080 Ti host:
- A, the host's card (CC 7.5, so vLLM 0.10 runs its V0 engine): a good model next to one with an
  unknown engine argument and one whose context exceeds its KV cache (num_gpu_blocks_override 8,
  as vLLM counts it), with --exit-on-error=false so the good one serves while the others show
  their reasons. Streaming, cancellation, metrics and a clean stop are checked here.
- B, the same container seeing an A100 80GB profile (TRITONOPS_LAB_GPU_PROFILE, as the lab's
  NVML library reads it), so the V1 AsyncLLM path serves: health ready, generate, the
  `GPU KV cache size: N tokens` line.
What is staged: the GPUs (the lab's profile files), the engine (the lab's stand-in vllm on CPU).
What is real: Docker, tritonserver, the Python backend stub, HTTP, metrics, the image build.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from tests.support.network import closed_port
from tritonops.image.api import build_images
from tritonops.inventory import load_inventory
from tritonops.lab.hub import tiny_model
from tritonops.lab.inventory import WHEELHOUSE_PORT
from tritonops.lab.profile_file import render_profile
from tritonops.lab.profiles import PROFILES
from tritonops.lab import api as lab_api
from tritonops.lab.testing import test_lab_port_base, test_lab_prefix
from tritonops.lab.request import HostSpec, LabRequest
from tritonops.lab.wheelhouse import LAB_VLLM_VERSION, serve_on_host, wheel_bytes
from tritonops.render.model_repository import RepositoryModel, render_model_repository
from tritonops.transport.sessions import open_transport
from tritonops.tarball import tar_bytes

pytestmark = pytest.mark.lab

ROOT = "/tmp/tritonops-backendtest"
NAME = "tritonops-backendtest"
# A lab of its own (prefix, ports, state dir): the shared test lab comes and goes with other sessions.
PREFIX = test_lab_prefix("backend")
PORT_BASE = test_lab_port_base(220)
FULL_2080TI = "bk-full-2080ti"
# With --gpus on a lab host, tritonserver 2.51's GPU metrics (DCGM over the lab's libnvidia-ml) never
# finish starting: the server hangs after its model table, before HTTP. Not needed here.
GPU_METRICS_OFF = "--allow-gpu-metrics=false"
WEIGHTS = "/weights/tiny-llama"
GRPC_PORT = 28001  # server A's gRPC port on the lab host's loopback, reached through an SSH tunnel


def _ssh(lab, command: str, stdin: bytes | None = None, timeout: float = 120.0, check: bool = True):
    proc = subprocess.run(lab.ssh_argv(FULL_2080TI, command), input=stdin, capture_output=True, timeout=timeout)
    out = proc.stdout.decode(errors="replace")
    if check and proc.returncode != 0:
        raise AssertionError(f"'{command}' exited {proc.returncode}\n{out}\n{proc.stderr.decode(errors='replace')}")
    return out


def _image(lab, tmp_path) -> str:
    """The vllm_env image with today's backend and stand-in: the index serves the current wheel,
    and its sha256 rides in a constraints comment, so a changed stand-in is a new content hash."""
    transport = open_transport(lab.connection(FULL_2080TI))
    try:
        serve_on_host(transport, WHEELHOUSE_PORT)
    finally:
        transport.close()
    lab_vars = yaml.safe_load(lab.inventory_file.read_text())["all"]["children"]["lab"]["children"]["lab_full"]["vars"]
    constraints = tmp_path / "constraints.txt"
    constraints.write_text(f"# tritonops lab stand-in vllm wheel sha256 "
                           f"{hashlib.sha256(wheel_bytes(LAB_VLLM_VERSION)).hexdigest()}\n")
    host = lab.host(FULL_2080TI)
    variables = {k: v for k, v in lab_vars.items() if k.startswith("tritonops_") and k != "tritonops_model"}
    variables.update({"ansible_user": "root", "ansible_ssh_private_key_file": str(lab.key_file),
                      "tritonops_known_hosts_file": str(lab.known_hosts_file),
                      "tritonops_build_host": FULL_2080TI, "tritonops_pip_constraints": str(constraints)})
    path = tmp_path / "inv.yml"
    path.write_text(yaml.safe_dump({"all": {"vars": variables, "hosts": {
        FULL_2080TI: {"ansible_host": host.address, "ansible_port": host.port}}}}))
    report = build_images(load_inventory([str(path)]).select(None))
    (result,) = report.results
    assert result.status in ("ok", "changed"), result.msg
    return result.payload["image_id"]


def _repository(models: dict[str, dict]) -> dict[str, bytes]:
    files = render_model_repository([RepositoryModel(name, 1, args) for name, args in models.items()])
    return {path: text.encode() for path, text in files.items()}


def _start(lab, name: str, image: str, repo: str, extra: str = "") -> None:
    _ssh(lab, f"docker rm -f {name} >/dev/null 2>&1; docker run -d --name {name} --gpus all --shm-size 256m "
              f"-e TRITONOPS_LAB_TOKENS_PER_S=40 -v {ROOT}/{repo}:/models:ro -v {ROOT}/tiny:{WEIGHTS}:ro {extra} "
              f"{image} tritonserver --model-repository=/models --exit-on-error=false --log-format ISO8601 "
              f"--exit-timeout-secs 10 {GPU_METRICS_OFF}")


def _wait_model(lab, name: str, model: str, timeout_s: int = 90) -> None:
    script = (f"end=$(( $(date +%s) + {timeout_s} )); while [ $(date +%s) -lt $end ]; do "
              f"docker exec {name} curl -sf localhost:8000/v2/models/{model}/ready && exit 0; "
              f"[ \"$(docker inspect -f '{{{{.State.Running}}}}' {name})\" = true ] || exit 3; sleep 0.25; done; exit 1")
    proc = subprocess.run(lab.ssh_argv(FULL_2080TI, script), capture_output=True, timeout=timeout_s + 30)
    if proc.returncode != 0:
        logs = _ssh(lab, f"docker logs --tail 60 {name} 2>&1", check=False)
        raise AssertionError(f"{name}/{model} not ready (rc {proc.returncode}):\n{logs}")


def _curl(lab, name: str, path: str, body: dict | None = None, port: int = 8000, extra: str = "") -> str:
    data = f"-X POST -d {shlex.quote(json.dumps(body))}" if body is not None else ""
    return _ssh(lab, f"docker exec {name} curl -s {extra} {data} localhost:{port}{path}", check=False)


@pytest.fixture(scope="module")
def lab():
    state_dir = os.environ.get("TRITONOPS_BACKEND_LAB_STATE", Path(tempfile.gettempdir()) / PREFIX)
    state = lab_api.up(LabRequest((HostSpec(FULL_2080TI, "2080ti", "full"),)), state_dir=state_dir,
                       name_prefix=PREFIX, port_base=PORT_BASE)
    if state.results.failed:
        pytest.fail("lab up failed: " + "; ".join(f"{r.host}: {r.msg}" for r in state.results.failed))
    yield state
    if not os.environ.get("TRITONOPS_LAB_KEEP"):
        lab_api.down(state_dir=state_dir, name_prefix=PREFIX)


@pytest.fixture(scope="module")
def servers(lab, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("backendlab")
    started = time.monotonic()
    image = _image(lab, tmp)
    built = time.monotonic() - started
    weights = {"model": WEIGHTS, "gpu_memory_utilization": 0.5}
    files = {f"tiny/{n}": d for n, d in tiny_model().items()}
    files.update({f"repo-a/{p}": d for p, d in _repository({
        "vllm_model": weights,
        "bad_arg": dict(weights, disable_log_requests=True),  # gone since vLLM 0.10.1
        "too_long": dict(weights, num_gpu_blocks_override=8),  # 8 blocks x 16 = 128 tokens < 2048
    }).items()})
    files.update({f"repo-b/{p}": d for p, d in _repository({"vllm_model": weights}).items()})
    files["a100.profile"] = render_profile(PROFILES["a100x4"], FULL_2080TI).encode()
    _ssh(lab, f"rm -rf {ROOT} && mkdir -p {ROOT} && tar -xf - -C {ROOT}", stdin=tar_bytes(files))
    a, b = f"{NAME}-a", f"{NAME}-b"
    try:
        _start(lab, a, image, "repo-a", f"-p 127.0.0.1:{GRPC_PORT}:8001")
        _start(lab, b, image, "repo-b", f"-v {ROOT}/a100.profile:/etc/tritonops-lab/a100:ro "
                                        "-e TRITONOPS_LAB_GPU_PROFILE=/etc/tritonops-lab/a100")
        _wait_model(lab, a, "vllm_model")
        _wait_model(lab, b, "vllm_model")
        yield {"a": a, "b": b, "image": image, "build_s": built}
    finally:
        _ssh(lab, f"docker rm -f {a} {b} >/dev/null 2>&1; rm -rf {ROOT}", check=False)


def test_generate_answers_with_text(lab, servers):
    reply = json.loads(_curl(lab, servers["a"], "/v2/models/vllm_model/generate",
                             {"text_input": "hello lab", "parameters": {"max_tokens": 8}}))
    assert reply["model_name"] == "vllm_model"
    text = reply["text_output"]
    assert text.startswith("hello lab ") and len(text.split()) == 2 + 8
    again = json.loads(_curl(lab, servers["a"], "/v2/models/vllm_model/generate",
                             {"text_input": "hello lab", "exclude_input_in_output": True,
                              "parameters": {"max_tokens": 8}}))
    assert "hello lab" + again["text_output"] == text  # deterministic


@contextmanager
def _tunnel(lab, remote_port: int):
    """A local port forwarded to the lab host's loopback `remote_port` by OpenSSH (`-L`)."""
    local = closed_port()  # free for the tunnel's local end
    argv = lab.ssh_argv(FULL_2080TI)
    argv[-1:-1] = ["-N", "-o", "ExitOnForwardFailure=yes", "-L", f"127.0.0.1:{local}:127.0.0.1:{remote_port}"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", local), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"ssh -L failed: {proc.stderr.read().decode(errors='replace')}")
                time.sleep(0.1)
        yield local
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_tritonclient_grpc_streaming_works_unchanged(lab, servers):
    """The client NVIDIA's vLLM backend documents: tritonclient.grpc, a decoupled stream, the
    inputs as tensors (text_input, stream, sampling_parameters, exclude_input_in_output)."""
    import numpy as np
    import tritonclient.grpc as grpcclient

    def tensor(name, value, dtype):
        data = np.array([value], dtype=object if dtype == "BYTES" else bool)
        item = grpcclient.InferInput(name, [1], dtype)
        item.set_data_from_numpy(data)
        return item

    chunks, errors, final = [], [], threading.Event()

    def on_response(result, error):
        if error is not None:
            errors.append(str(error))
            final.set()
            return
        if result.get_response().parameters["triton_final_response"].bool_param:
            final.set()
        out = result.as_numpy("text_output")
        if out is not None:
            chunks.append(out[0].decode())

    with _tunnel(lab, GRPC_PORT) as port:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        assert client.is_model_ready("vllm_model")
        client.start_stream(callback=on_response)
        client.async_stream_infer("vllm_model", [
            tensor("text_input", "grpc says", "BYTES"), tensor("stream", True, "BOOL"),
            tensor("sampling_parameters", json.dumps({"max_tokens": 6}), "BYTES"),
            tensor("exclude_input_in_output", True, "BOOL")],
            request_id="grpc-1", enable_empty_final_response=True)
        assert final.wait(30), chunks
        client.stop_stream()
        client.close()
    assert not errors, errors
    words = "".join(chunks).split()
    assert len([c for c in chunks if c]) >= 5 and len(words) == 6, chunks
    whole = json.loads(_curl(lab, servers["a"], "/v2/models/vllm_model/generate",
                             {"text_input": "grpc says", "exclude_input_in_output": True,
                              "parameters": {"max_tokens": 6}}))
    assert "".join(chunks) == whole["text_output"]  # the same text as the HTTP endpoint


def test_generate_stream_sends_several_chunks(lab, servers):
    out = _curl(lab, servers["a"], "/v2/models/vllm_model/generate_stream",
                {"text_input": "stream me", "parameters": {"stream": True, "max_tokens": 6}}, extra="-N")
    events = [json.loads(line[5:]) for line in out.splitlines() if line.startswith("data:")]
    assert len(events) >= 5 and all("error" not in e for e in events), out
    assert len("".join(e["text_output"] for e in events).split()) == 6


def test_a_bad_sampling_parameter_is_an_error_for_that_request_only(lab, servers):
    out = _curl(lab, servers["a"], "/v2/models/vllm_model/generate",
                {"text_input": "x", "parameters": {"max_tokenz": 3}})
    assert "unknown sampling parameter(s) 'max_tokenz'" in out
    ok = json.loads(_curl(lab, servers["a"], "/v2/models/vllm_model/generate",
                          {"text_input": "x", "parameters": {"max_tokens": 2}}))
    assert ok["text_output"]


def test_an_engine_error_reaches_the_client(lab, servers):
    out = _curl(lab, servers["a"], "/v2/models/vllm_model/generate",
                {"text_input": "__lab_engine_error__", "parameters": {"max_tokens": 4}})
    assert "vLLM engine error" in out and "injected failure" in out


def test_a_client_that_goes_away_is_aborted_in_the_engine(lab, servers):
    _curl(lab, servers["a"], "/v2/models/vllm_model/generate_stream",
          {"text_input": "a long one", "parameters": {"stream": True, "max_tokens": 400}}, extra="-N --max-time 1")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        logs = _ssh(lab, f"docker logs {servers['a']} 2>&1", check=False)
        if "the client went away; aborted in the engine" in logs:
            break
        time.sleep(0.5)
    assert "the client went away; aborted in the engine" in logs
    assert re.search(r"Aborted request \S+\.", logs)


def test_metrics_show_triton_and_vllm_families(lab, servers):
    _curl(lab, servers["a"], "/v2/models/vllm_model/generate", {"text_input": "count me", "parameters": {"max_tokens": 3}})
    text = _curl(lab, servers["a"], "/metrics", port=8002)
    assert re.search(r'^nv_inference_request_success\{model="vllm_model",version="1"\} [1-9]', text, re.M), text
    for name in ("vllm:prompt_tokens_total", "vllm:generation_tokens_total"):
        assert re.search(rf'^{name}\{{model="vllm_model",version="1"\}} [1-9]', text, re.M), name
    for name in ("vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"):
        assert re.search(rf'^{name}_count\{{model="vllm_model",version="1"\}} [1-9]', text, re.M), name
    body = shlex.quote(json.dumps({"text_input": "hold blocks", "parameters": {"stream": True, "max_tokens": 120}}))
    inner = (f"curl -s -N -o /dev/null -X POST -d {body} localhost:8000/v2/models/vllm_model/generate_stream & "
             "sleep 1; curl -s localhost:8002/metrics; wait")
    during = _ssh(lab, f"docker exec {servers['a']} sh -c {shlex.quote(inner)}", check=False)
    for name in ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"):  # the engine's figure while it holds blocks
        found = re.search(rf'^{name}\{{model="vllm_model",version="1"\}} (\S+)$', during, re.M)
        assert found and float(found.group(1)) > 0, (name, found)


def test_an_unknown_engine_argument_makes_that_model_unavailable_with_vllms_type_error(lab, servers):
    index = {m["name"]: m for m in json.loads(_curl(lab, servers["a"], "/v2/repository/index", {}))}
    assert index["vllm_model"]["state"] == "READY"
    assert index["bad_arg"]["state"] == "UNAVAILABLE"
    assert "__init__() got an unexpected keyword argument 'disable_log_requests'" in index["bad_arg"]["reason"]
    logs = _ssh(lab, f"docker logs {servers['a']} 2>&1", check=False)
    assert "TypeError: AsyncEngineArgs.__init__() got an unexpected keyword argument 'disable_log_requests'" in logs


def test_a_context_larger_than_the_kv_cache_fails_with_vllms_message(lab, servers):
    index = {m["name"]: m for m in json.loads(_curl(lab, servers["a"], "/v2/repository/index", {}))}
    assert index["too_long"]["state"] == "UNAVAILABLE"
    assert ("The model's max seq len (2048) is larger than the maximum number of tokens that can be stored in "
            "KV cache (128)") in index["too_long"]["reason"]


def test_the_v0_engine_on_a_cc_7_5_card_prints_its_block_count(lab, servers):
    logs = _ssh(lab, f"docker logs {servers['a']} 2>&1", check=False)
    assert "Initializing a V0 LLM engine (v0.10.2)" in logs
    assert re.search(r"# cuda blocks: [1-9]\d*, # CPU blocks: \d+", logs)
    assert "V0 engine vllm.engine.async_llm_engine.AsyncLLMEngine ready" in logs


def test_the_v1_engine_serves_and_reports_its_kv_cache_size(lab, servers):
    b = servers["b"]
    assert _ssh(lab, f"docker exec {b} curl -s -o /dev/null -w '%{{http_code}}' localhost:8000/v2/health/ready") == "200"
    reply = json.loads(_curl(lab, b, "/v2/models/vllm_model/generate",
                             {"text_input": "on an A100", "parameters": {"max_tokens": 4}}))
    assert len(reply["text_output"].split()) == 3 + 4
    logs = _ssh(lab, f"docker logs {b} 2>&1", check=False)
    assert "V1 engine vllm.v1.engine.async_llm.AsyncLLM ready" in logs
    tokens = [int(n.replace(",", "")) for n in re.findall(r"GPU KV cache size: ([\d,]+) tokens", logs)]
    assert len(tokens) == 1 and tokens[0] > 1_000_000  # half of an 80 GB card for a 3 MB model
    assert 'vllm:generation_tokens_total{model="vllm_model",version="1"} 4' in _curl(lab, b, "/metrics", port=8002)


def test_the_server_stops_cleanly_and_stops_the_engine(lab, servers):
    b = servers["b"]
    _ssh(lab, f"docker stop -t 30 {b} >/dev/null")
    assert _ssh(lab, f"docker inspect -f '{{{{.State.ExitCode}}}}' {b}").strip() == "0"
    logs = _ssh(lab, f"docker logs {b} 2>&1", check=False)
    assert "[vllm] engine stopped (shutdown)" in logs
    assert "Segfault" not in logs and "successfully unloaded 'vllm_model' version 1" in logs
