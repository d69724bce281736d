"""The `openai` serving mode (issue #23, production side): Triton's OpenAI frontend's command line, the gate's
and the health check's requests, the image preflight's floor, and the front door in that mode -- its config
checked by the real `haproxy -c`, its own refusals read by the official `openai` client through a real haproxy."""

from __future__ import annotations

import http.server
import json
import threading
import time

import openai
import pytest

from tests.support.serve_records import serve_record
from tests.support.haproxy_door import Door, haproxy_check, write_files
from tests.support.network import server_port
from tritonops.errors import InputError
from tritonops.host_programs.triton_client import answer_text, ask
from tritonops.image import ngc
from tritonops.image.preflight import EngineFacts, ImageNeeds, check
from tritonops.modes.choice import serving_mode
from tritonops.modes.openai import OPENAI
from tritonops.operations.release import ReleaseArgs, content_digest
from tritonops.operations.serve import ContainerSettings, ServeArgs, serve_step
from tritonops.planning.door import served_host
from tritonops.render.door_config import BalancedReplica, BalancerConfig, BalancerGlobals, render_deployment
from tritonops.serving.container import run_argv

REPO = "/opt/tritonops/chat/releases/r1/model_repository"
WEIGHTS = "/opt/tritonops/chat/models/qwen-0123"
SERVE = {"models": ["chat"], "gpus": [0], "weights_dirs": [WEIGHTS], "deadline_s": 600, "kv_cache_tokens": 0,
         "frontend": "openai", "replicas": [{"index": 0, "gpus": [0], "ports": [8000, 8001, 9000]}]}


def test_the_frontend_runs_on_the_repository_with_the_models_weights_as_tokenizer_and_the_kserve_ports_on():
    assert OPENAI.server_argv(REPO, 30, (), (WEIGHTS,)) == (
        "python3", "/opt/tritonserver/python/openai/openai_frontend/main.py", "--model-repository", REPO,
        "--tokenizer", WEIGHTS, "--openai-port", "9000", "--enable-kserve-frontends", "--kserve-http-port", "8000",
        "--kserve-grpc-port", "8001")
    with pytest.raises(ValueError, match="weights folder"):
        OPENAI.server_argv(REPO, 30, ())


def test_the_production_container_publishes_the_openai_port_and_runs_the_frontend_with_no_restricted_flags():
    settings = ContainerSettings(admin_key_file="/opt/tritonops/chat/admin.key")  # the role's default
    step = serve_step("/opt/tritonops/chat", "chat", "r1", "sha256:img", serve_record(**SERVE), settings)
    argv = run_argv(step.spec)
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--publish"] == [
        "0.0.0.0:8000:8000", "0.0.0.0:8001:8001", "0.0.0.0:9000:9000"]
    assert argv[argv.index("--") + 1:] == OPENAI.server_argv("/opt/tritonops/chat/releases/r1/model_repository",
                                                             30, (), (WEIGHTS,))
    assert not any("restricted" in a or "admin.key" in a for a in argv)  # main.py takes no such flags
    assert step.rollout.prepare["admin_key_file"] is None
    assert step.rollout.launches[0].endpoints() == {"http": 8000, "grpc": 8001, "openai": 9000}


def test_check_diff_shows_the_frontends_command_line():
    step = serve_step("/opt/tritonops/chat", "chat", "r1", "sha256:img", serve_record(**SERVE), ContainerSettings())
    (said,) = step.details()  # -v shows it (issue #45 item 1: --diff says only what changes and why)
    assert said.startswith("tritonops-chat on release r1: docker run --detach --name tritonops-chat ")
    assert said.rstrip().endswith(
        "python3 /opt/tritonserver/python/openai/openai_frontend/main.py --model-repository "
        f"{REPO} --tokenizer {WEIGHTS} --openai-port 9000 --enable-kserve-frontends --kserve-http-port 8000 "
        "--kserve-grpc-port 8001")


def test_the_gate_asks_health_the_model_a_chat_completion_and_a_streamed_one():
    asked = OPENAI.host_requests(["chat"], "The capital of France is", 8)
    assert asked["live"] == asked["ready"] == {"port": "openai", "method": "GET", "path": "/health/ready"}
    assert asked["metrics"] == {"port": "openai", "method": "GET", "path": "/metrics"}
    body = {"model": "chat", "messages": [{"role": "user", "content": "The capital of France is"}], "max_tokens": 8}
    assert asked["models"]["chat"] == {
        "ready": {"port": "openai", "method": "GET", "path": "/v1/models/chat"},
        "generate": [{"port": "openai", "method": "POST", "path": "/v1/chat/completions", "body": body,
                      "text": ["choices", 0, "message", "content"]},
                     {"port": "openai", "method": "POST", "path": "/v1/chat/completions",
                      "body": {**body, "stream": True}, "text": ["choices", 0, "delta", "content"], "stream": True}]}


def _event(text):
    return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}) + "\n\n"


def test_a_streamed_answer_is_text_only_when_its_events_end_with_done():
    request = OPENAI.generate("chat", "hi", 8)[1].document()
    whole = _event("Par") + _event("is") + "data: [DONE]\n\n"
    assert answer_text(request, 200, whole) == "Paris"
    assert answer_text(request, 200, _event("Par")) is None  # cut before [DONE]
    assert answer_text(request, 500, whole) is None
    plain = OPENAI.generate("chat", "hi", 8)[0].document()
    assert answer_text(plain, 200, json.dumps({"choices": [{"message": {"content": "Paris"}}]})) == "Paris"
    assert answer_text(plain, 200, json.dumps({"choices": []})) is None


class Frontend(http.server.BaseHTTPRequestHandler):
    """What the door and the gate's client code see of a replica in this mode: /health/ready, and a chat
    completion streamed as server-sent events, one every 0.3 s (the door must not hold them back)."""
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200 if self.path == "/health/ready" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for piece in [_event(w) for w in ("Pa", "ri", "s")] + ["data: [DONE]\n\n"]:
            data = piece.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            time.sleep(0.3)
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


def test_the_gate_reads_a_streamed_answer_to_its_end_over_http():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Frontend)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        request = OPENAI.generate("chat", "hi", 8)[1].document()
        code, body = ask(request, {"openai": server.server_address[1]})
    finally:
        server.shutdown()
        server.server_close()
    assert (code, answer_text(request, code, body)) == (200, "Paris")


def test_tritonops_frontend_is_checked_with_a_did_you_mean():
    assert serving_mode("openai") is OPENAI and serve_record(**SERVE).mode is OPENAI
    with pytest.raises(InputError, match=r"^group_vars/all.yml:3: tritonops_frontend 'opneai' .*did you mean "
                                         r"'openai'\?"):
        serving_mode("opneai", "group_vars/all.yml:3")
    with pytest.raises(ValueError, match="serve.frontend: .*'grpc' is not a serving mode"):
        ServeArgs.model_validate({"release": {"root": "/r", "files": {}, "image_id": "i", "created": "c"},
                                  "deployment": "d", "serve": {**SERVE, "frontend": "grpc"}})


def test_another_mode_makes_another_release():
    args = ReleaseArgs(root="/r", files={}, image_id="i", created="c", metadata={"serve": serve_record().to_release()})
    openai_args = args.model_copy(update={"metadata": {"serve": serve_record(frontend="openai").to_release()}})
    kserve_args = args.model_copy(update={"metadata": {"serve": serve_record(frontend="kserve").to_release()}})
    assert content_digest(openai_args, "w") != content_digest(args, "w") == content_digest(kserve_args, "w")


def test_the_preflight_refuses_a_base_without_the_frontend_and_says_the_release_it_needs():
    engine = EngineFacts(answering=True)
    old = check(None, engine, ImageNeeds(ngc.lookup("24.10"), None, frontend="openai"))
    assert old.refusals == ("tritonops_frontend openai runs Triton's OpenAI frontend (/opt/tritonserver/python/openai/"
                            "openai_frontend/main.py), which NGC tritonserver images ship from 24.11 on (Triton "
                            "2.52); 24.10 has none: pick a base of 24.11 or later",)
    assert check(None, engine, ImageNeeds(ngc.lookup("24.11"), None, frontend="openai")).ok
    assert check(None, engine, ImageNeeds(ngc.lookup("24.10"), None)).ok  # kserve: tritonserver is in every one


class Host:
    name, groups, vars = "node-a", (), {"ansible_host": "10.0.0.1"}


def test_the_door_sends_openai_paths_to_the_replicas_openai_ports_and_answers_in_openais_shape():
    served = served_host(Host(), serve_record(**SERVE), 64)
    assert served.replicas == ((0, 9000, 8001),)
    lines = render_deployment(BalancerConfig("chat", (BalancedReplica("node-a-r0", "10.0.0.1", 9000, 8001, 64),),
                                             keys_file="/etc/tritonops/chat.keys", mode=OPENAI)).splitlines()
    assert "    acl open path /health/ready" in lines
    assert ("    acl exposed path_reg '^(/health/ready|/v1/(models(/[A-Za-z0-9][A-Za-z0-9_.-]*)?|completions|"
            "chat/completions))$'") in lines
    assert "    server node-a-r0 10.0.0.1:9000 maxconn 64" in lines
    assert "    http-check send meth GET uri /health/ready" in lines
    assert ("    http-request return status 401 content-type application/json string '{\"error\": {\"message\": "
            "\"an API key is needed: Authorization: Bearer <key>\", \"type\": \"authentication_error\", \"param\": "
            "null, \"code\": \"unauthorized\"}}' hdr www-authenticate Bearer unless open or key_ok") in lines
    assert "    option http-no-delay" in lines  # each server-sent event leaves at once


def test_haproxy_accepts_the_openai_door(tmp_path):
    keys = tmp_path / "chat.keys"
    keys.write_text("key-one\n")
    config = BalancerConfig("chat", (BalancedReplica("node-a-r0", "10.0.0.1", 9000, 8001, 64),),
                            keys_file=str(keys), mode=OPENAI)
    checked = haproxy_check(write_files(tmp_path / "conf", BalancerGlobals(stats_socket=str(tmp_path / "s")), config))
    assert checked.returncode == 0 and "WARNING" not in checked.stdout + checked.stderr, checked.stderr


@pytest.fixture
def openai_door(tmp_path):
    """A real haproxy rendering the openai mode's door, with a key, in front of `replica_port`."""
    doors = []

    def start(replica_port: int) -> Door:
        keys = tmp_path / "chat.keys"
        keys.write_text("the-key\n")
        config = BalancerConfig("chat", (BalancedReplica("r0", "127.0.0.1", replica_port, server_port(), 8),),
                                http_port=server_port(), grpc_port=None, check_interval_ms=100,
                                bind_address="127.0.0.1", keys_file=str(keys), mode=OPENAI)
        doors.append(Door(tmp_path / f"door{len(doors)}", config))
        return doors[-1]

    yield start
    for door in doors:
        door.stop()


def client(door: Door, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://127.0.0.1:{door.port}/v1", api_key=key, max_retries=0, timeout=10)


def test_the_official_client_reads_the_doors_refusals_as_its_own_errors(openai_door):
    door = openai_door(server_port())  # nothing listens there: the replica goes down
    door.wait_status("r0", "DOWN")
    with pytest.raises(openai.AuthenticationError) as no_key:
        client(door, "not-the-key").models.list()
    with pytest.raises(openai.PermissionDeniedError) as not_exposed:
        client(door, "the-key").files.list()
    with pytest.raises(openai.InternalServerError) as no_replica:
        client(door, "the-key").chat.completions.create(model="chat", messages=[{"role": "user", "content": "hi"}])
    found = [(e.value.status_code, e.value.code, e.value.type) for e in (no_key, not_exposed, no_replica)]
    assert found == [(401, "unauthorized", "authentication_error"), (403, "not_exposed", "permission_error"),
                     (503, "no_replica", "server_error")]
    assert "an API key is needed" in no_key.value.message


def test_a_stream_through_the_door_arrives_event_by_event(openai_door):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Frontend)
    server.daemon_threads = True
    server.handle_error = lambda *args: None  # HAProxy ends each health check with a reset
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        door = openai_door(server.server_address[1])
        door.wait_status("r0", "UP")
        official = client(door, "the-key")
        texts, arrivals = [], []
        for _ in range(2):  # the first stream pays the client's one-off set-up, which would delay its first chunk
            started, arrivals, text = time.monotonic(), [], ""
            for chunk in official.chat.completions.create(
                    model="chat", messages=[{"role": "user", "content": "hi"}], stream=True):
                arrivals.append(time.monotonic() - started)
                text += chunk.choices[0].delta.content or ""
            texts.append(text)
    finally:
        server.shutdown()
        server.server_close()
    assert texts == ["Paris", "Paris"]
    # the three events came as they were sent, 0.3 s apart (0.6 s from first to last), not in one burst (~0 s)
    assert arrivals[-1] - arrivals[0] >= 0.35, arrivals


def test_the_plan_takes_the_mode_and_its_openai_port_from_the_inventory(tmp_path):
    from tests.support.planning import plan

    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_frontend: openai\n"
                        "      tritonops_openai_port: 9100\n")
    assert hp.ok and hp.frontend == "openai"
    assert [r.ports.all() for r in hp.placement.replicas] == [(8000, 8001, 9100)]
    assert plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n").placement.replicas[0].ports.all() == \
        (8000, 8001, 8002)


def test_a_misspelt_mode_is_that_hosts_plan_error_at_its_line(tmp_path):
    from tests.support.planning import plan

    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_frontend: OpenAI\n")
    assert not hp.ok and not hp.files
    assert hp.error == (f"{tmp_path / 'hosts.yml'}:6: tritonops_frontend 'OpenAI' is not a serving mode (known: "
                        "kserve, openai, vllm); did you mean 'openai'?")


def test_a_check_run_with_diff_of_the_serve_task_shows_the_frontends_command_line(tmp_path):
    """The serve_release task as `deploy --check --diff` runs it, on this machine (its facts read for real: no
    release folder, no container of that name): changed, nothing started, the diff naming the command line."""
    from tritonops.operations.serve import serve_release
    from tritonops.playbook.host_task import run_host_task
    from tritonops.transport.local import LocalTransport
    from tritonops.transport.sessions import HostSession
    from tritonops.transport.spec import ConnectionSpec

    root = str(tmp_path / "chat")
    args = ServeArgs.model_validate({
        "release": {"root": root, "files": {"chat/config.pbtxt": "backend: \"vllm\"\n"}, "image_id": "sha256:img",
                    "created": "20261202T150000Z"},
        "deployment": "tritonops-test-openai-check", "serve": SERVE})
    session = HostSession(ConnectionSpec(name="h1", host="localhost"), LocalTransport("h1"))
    done = run_host_task(session, serve_release, [args], check=True, diff=True)
    assert done.status == "changed" and done.msg.startswith("would start tritonops-tritonops-test-openai-check")
    assert "python3 /opt/tritonserver/python/openai/openai_frontend/main.py --model-repository " \
           f"{root}/releases/" in "".join(done.payload.details)
    assert f"--tokenizer {WEIGHTS} --openai-port 9000 --enable-kserve-frontends" in done.payload.details[0]
    assert not (tmp_path / "chat").exists()
