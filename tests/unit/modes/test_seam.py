"""The serving-mode seam (tritonops/modes): the `kserve` mode says exactly what tritonops did before modes,
and every place that starts, checks or calls a replica asks the mode it is given."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass

import pytest

from tests.support.serve_records import serve_record
from tritonops import host_programs
from tritonops.errors import InputError
from tritonops.host_programs import triton_client
from tritonops.lab.generate import modes_document
from tritonops.modes.base import Request
from tritonops.modes.choice import MODES, serving_mode
from tritonops.modes.kserve import KSERVE, KServe
from tritonops.operations.serve import ContainerSettings, serve_step
from tritonops.planning.door import ServedHost, balancer_config, Door
from tritonops.render.door_config import BalancedReplica, BalancerConfig, render_deployment
from tritonops.serving.status import health_query

SERVE = {"models": ["chat"], "gpus": [0], "weights_dirs": ["/w"], "deadline_s": 60, "kv_cache_tokens": 0,
         "replicas": [{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]}]}


def test_kserve_runs_tritonserver_with_tritonops_flags_then_the_users():
    assert KSERVE.server_argv("/r/model_repository", 30, ("--log-verbose=1",)) == (
        "tritonserver", "--model-repository=/r/model_repository", "--log-format=ISO8601", "--exit-timeout-secs=30",
        "--strict-readiness=true", "--log-verbose=1")


def test_kserve_has_http_grpc_and_metrics_ports_in_release_json_order():
    assert KSERVE.ports == (("http", 8000), ("grpc", 8001), ("metrics", 8002))
    assert KSERVE.endpoints([8010, 8011, 8012]) == {"http": 8010, "grpc": 8011, "metrics": 8012}
    assert KSERVE.check_path == "/v2/health/ready"


def test_kserve_requests_are_the_ones_a_host_program_asks_for_an_input_without_a_mode():
    asked = KSERVE.host_requests(["chat", "code"], "The capital of France is", 8)
    assert asked == triton_client.kserve_requests(["chat", "code"], "The capital of France is", 8)
    assert asked["models"]["chat"] == {
        "ready": {"port": "http", "method": "GET", "path": "/v2/models/chat/ready"},
        "generate": [{"port": "http", "method": "POST", "path": "/v2/models/chat/generate",
                      "body": {"text_input": "The capital of France is",
                               "parameters": {"stream": False, "max_tokens": 8}}, "text": ["text_output"]}]}
    assert (asked["live"]["path"], asked["ready"]["path"], asked["metrics"]) == (
        "/v2/health/live", "/v2/health/ready", {"port": "metrics", "method": "GET", "path": "/metrics"})


def test_a_mode_is_named_by_tritonops_frontend_with_a_did_you_mean():
    assert serving_mode(None) is KSERVE and serving_mode("kserve") is KSERVE and set(MODES) >= {"kserve"}
    with pytest.raises(InputError, match=r"^inventory/hosts.yml:7: tritonops_frontend 'kserv' is not a serving "
                                         r"mode .*did you mean 'kserve'\?"):
        serving_mode("kserv", "inventory/hosts.yml:7")
    assert serve_record(models=["m"]).mode is KSERVE  # a release made before modes


def test_the_serve_step_gives_the_gate_the_modes_requests_and_each_replica_its_endpoints():
    step = serve_step("/opt/tritonops/d", "d", "r1", "img", serve_record(**SERVE),
                      ContainerSettings(prompt="Hi", max_tokens=3))
    assert step.rollout.requests == KSERVE.host_requests(["chat"], "Hi", 3)
    assert step.rollout.launches[0].endpoints() == {"http": 8000, "grpc": 8001, "metrics": 8002}
    assert step.specs[0].mode is KSERVE


@dataclass(frozen=True)
class Elsewhere(KServe):
    """A mode of the test's own: its routes are not KServe's, so only a program that asks the mode finds them."""
    name: str = "elsewhere"
    ports: tuple = (("api", 9000), ("metrics", 9002))
    check_path: str = "/healthz"

    def live(self):
        return Request("api", "/livez")

    def ready(self):
        return Request("api", "/healthz")

    def model_ready(self, model):
        return None

    def metrics(self):
        return Request("api", "/stats")


class ElsewhereServer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = {"/livez": b"", "/healthz": b"", "/stats": b"nv_inference_request_success 1\n"}.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def log_message(self, *args):
        pass


def test_the_health_check_asks_what_the_mode_says_at_the_port_of_its_role():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ElsewhereServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        query = health_query(Elsewhere(), [server.server_address[1], 1], ("chat",), "127.0.0.1")
        done = subprocess.run((sys.executable, *query.argv[1:]), capture_output=True, text=True, timeout=60,
                              cwd="/", env={"PATH": os.environ.get("PATH", "")})
    finally:
        server.shutdown()
        server.server_close()
    assert json.loads(done.stdout) == {"live": True, "ready": True, "models": {"chat": True},
                                       "metrics": "nv_inference_request_success 1\n"}, done.stderr
    assert query.argv[:3] == ("python3", "-c", host_programs.source("triton_health"))


def test_the_balancer_checks_the_path_its_replicas_mode_says():
    replicas = (BalancedReplica("a-r0", "10.0.0.1", 8100, 8101, 8),)
    assert "    http-check send meth GET uri /v2/health/ready" in render_deployment(
        BalancerConfig("chat", replicas)).splitlines()
    assert "    http-check send meth GET uri /healthz" in render_deployment(
        BalancerConfig("chat", replicas, mode=Elsewhere())).splitlines()
    hosts = [ServedHost("a", "10.0.0.1", ((0, 8100, 8101),), 8, Elsewhere()),
             ServedHost("b", "10.0.0.2", ((0, 8100, 8101),), 8, KSERVE)]
    assert balancer_config("chat", Door(), hosts[:1]).mode == Elsewhere()
    with pytest.raises(InputError, match="its hosts serve in different modes"):
        balancer_config("chat", Door(), hosts)


def test_the_lab_request_carries_each_modes_generate_request():
    doc = json.loads(modes_document("vllm_model", "Hi"))
    assert doc["kserve"] == {"ports": ["http", "grpc", "metrics"],
                             "generate": KSERVE.generate("vllm_model", "Hi", 12)[0].document()}
