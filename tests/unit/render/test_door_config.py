"""The front door's HAProxy configuration: its text by equality, every variant checked by the real
`haproxy -c`, and its behaviour through a real haproxy in front of two small Python replicas.

haproxy is installed by scripts/bootstrap.sh: these tests fail, never skip, without it. Everything they
start binds free ports on 127.0.0.1 and is stopped by its fixture; every wait is bounded.
"""

from __future__ import annotations

import csv
import datetime
import http.client
import io
import ipaddress
import json
import re
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.haproxy_door import Door, haproxy_check, write_files
from tests.support.network import server_port
from tritonops.errors import InputError
from tritonops.render.door_config import (
    GLOBALS_FILE, BalancedReplica, BalancerConfig, BalancerGlobals, deployment_file, grpc_backend, http_backend,
    render_balancer_files, render_deployment, render_globals,
)

TWO = (BalancedReplica("node-a-r0", "10.0.0.1", 8100, 8101, 256),
       BalancedReplica("node-b-r0", "10.0.0.2", 8100, 8101, 128))


# --- the text -------------------------------------------------------------------------------------------

def test_the_global_file_runs_master_worker_with_an_admin_socket_and_the_prometheus_exporter_on_loopback():
    assert render_globals(BalancerGlobals()) == """\
# tritonops: the balancer's global section, defaults and metrics (rendered; edits are replaced)
global
    master-worker
    maxconn 8000
    stats socket /run/haproxy/tritonops-admin.sock mode 600 level admin expose-fd listeners
    log ring@tritonops_log local0 info

ring tritonops_log
    format iso
    maxlen 4096
    size 4194304

defaults
    mode http
    log global
    option httplog
    option dontlognull
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout http-request 10s
    timeout http-keep-alive 10s
    timeout check 5s

frontend tritonops_metrics
    bind 127.0.0.1:8405
    http-request use-service prometheus-exporter if { path /metrics }
    http-request return status 404
"""


@pytest.mark.parametrize("address, bind", [("10.0.0.2", "bind 10.0.0.2:8405"), ("fd00::2", "bind [fd00::2]:8405"),
                                           ("*", "bind *:8405")])
def test_the_exporter_binds_only_where_it_is_told(address, bind):
    rendered = render_globals(BalancerGlobals(metrics_address=address)).splitlines()
    assert rendered[rendered.index("frontend tritonops_metrics") + 1] == f"    {bind}"



def test_a_deployment_without_grpc_has_one_door_and_one_backend():
    text = render_deployment(BalancerConfig("chat", TWO, grpc_port=None))
    assert text == """\
# tritonops: the front door of deployment chat (rendered; edits are replaced)

frontend tritonops_chat_http_door
    bind *:8000
    timeout client 900s
    acl open path /v2/health/live /v2/health/ready
    acl exposed path_reg '^/v2(/health/(live|ready)|/models/[A-Za-z0-9][A-Za-z0-9_.-]*(/versions/[0-9]+)?\
(/(ready|infer|generate|generate_stream))?)?$'
    acl all_models_stats path /v2/models/stats
    http-request return status 403 content-type application/json \
string '{"error": "this path is not served through the front door", "reason": "not_exposed"}' \
if !exposed or all_models_stats
    http-request return status 503 content-type application/json \
string '{"error": "no replica of this deployment is up", "reason": "no_replica"}' \
if { nbsrv(tritonops_chat_http) eq 0 }
    http-request return status 503 content-type application/json \
string '{"error": "too many requests are waiting for a replica; retry later", "reason": "queue_full"}' \
if { queue(tritonops_chat_http) ge 256 }
    default_backend tritonops_chat_http

backend tritonops_chat_http
    balance leastconn
    timeout server 900s
    timeout queue 2000ms
    option http-no-delay
    option http-buffer-request
    retry-on conn-failure empty-response
    retries 2
    option redispatch 1
    option httpchk
    http-check send meth GET uri /v2/health/ready
    http-check expect status 200
    http-error status 503 content-type application/json \
string '{"error": "the request waited too long for a free replica", "reason": "queue_timeout"}'
    default-server check inter 2000ms fall 3 rise 2 observe layer7 error-limit 10 on-error mark-down max-reuse 0
    server node-a-r0 10.0.0.1:8100 maxconn 256
    server node-b-r0 10.0.0.2:8100 maxconn 128
"""


def test_the_grpc_door_speaks_h2_to_replicas_and_checks_their_http_port_over_http1():
    lines = render_deployment(BalancerConfig("chat", TWO)).splitlines()
    grpc = lines[lines.index("frontend tritonops_chat_grpc_door"):]
    assert "    bind *:8001 proto h2" in grpc
    assert "backend tritonops_chat_grpc" in grpc
    assert grpc[-2:] == [
        "    server node-a-r0 10.0.0.1:8101 proto h2 check port 8100 check-proto h1 maxconn 256",
        "    server node-b-r0 10.0.0.2:8101 proto h2 check port 8100 check-proto h1 maxconn 128",
    ]
    assert ("    acl exposed path /inference.GRPCInferenceService/ServerLive"
            " /inference.GRPCInferenceService/ServerReady"
            " /inference.GRPCInferenceService/ServerMetadata /inference.GRPCInferenceService/ModelReady"
            " /inference.GRPCInferenceService/ModelMetadata /inference.GRPCInferenceService/ModelInfer"
            " /inference.GRPCInferenceService/ModelStreamInfer") in grpc
    # a gRPC client reads the code and the reason of a trailers-only answer, not a JSON body
    assert ("    http-request return status 200 hdr grpc-status 14"
            " hdr grpc-message 'queue_full: too many requests are waiting for a replica; retry later'"
            " if { queue(tritonops_chat_grpc) ge 256 }") in grpc
    assert ("    http-error status 503 hdr grpc-status 14"
            " hdr grpc-message 'queue_timeout: the request waited too long for a free replica'") in grpc
    # a gRPC call a replica holds is an open stream: only a connection that failed before it was sent is retried
    backend = grpc[grpc.index("backend tritonops_chat_grpc"):]
    assert ["    retry-on conn-failure", "    retries 2", "    option redispatch 1"] == [
        line for line in backend if line.startswith(("    retry-on", "    retries", "    option redispatch",
                                                      "    option http-buffer-request"))]


def test_api_keys_are_checked_at_both_doors_and_kept_from_the_replicas():
    lines = render_deployment(BalancerConfig("chat", TWO, keys_file="/etc/tritonops/chat.keys")).splitlines()
    assert lines.count("    acl key_ok http_auth_bearer -m str -f /etc/tritonops/chat.keys") == 2
    assert ("    http-request return status 401 content-type application/json string "
            "'{\"error\": \"an API key is needed: Authorization: Bearer <key>\", \"reason\": \"unauthorized\"}'"
            " hdr www-authenticate Bearer unless open or key_ok") in lines
    assert ("    http-request return status 200 hdr grpc-status 16"
            " hdr grpc-message 'unauthorized: an API key is needed: Authorization: Bearer <key>'"
            " unless open or key_ok") in lines
    assert lines.count("    http-request del-header authorization") == 2


def test_tls_terminates_at_both_doors():
    lines = render_deployment(BalancerConfig("chat", TWO, tls_pem="/etc/tritonops/door.pem")).splitlines()
    assert "    bind *:8000 ssl crt /etc/tritonops/door.pem alpn h2,http/1.1" in lines
    assert "    bind *:8001 ssl crt /etc/tritonops/door.pem alpn h2 proto h2" in lines


def test_ipv6_replicas_are_bracketed_and_the_runtime_names_are_the_backends():
    one = (BalancedReplica("r0", "fd00::0:1", 8100, 8101, 8),)
    assert "    server r0 [fd00::1]:8100 maxconn 8" in render_deployment(BalancerConfig("chat", one)).splitlines()
    assert (http_backend("chat"), grpc_backend("chat")) == ("tritonops_chat_http", "tritonops_chat_grpc")
    assert f"backend {http_backend('chat')}" in render_deployment(BalancerConfig("chat", one))


def test_the_files_sort_globals_first_and_a_port_bound_twice_is_refused():
    files = render_balancer_files(BalancerGlobals(), [BalancerConfig("0", TWO),
                                                      BalancerConfig("chat", TWO, 9000, 9001)])
    assert list(files) == [GLOBALS_FILE, "10-0.cfg", "10-chat.cfg"] == sorted(files)
    assert deployment_file("chat") == "10-chat.cfg"
    with pytest.raises(InputError, match="balancer code: http_port 8000 is bound twice on the balancer"):
        render_balancer_files(BalancerGlobals(), [BalancerConfig("chat", TWO), BalancerConfig("code", TWO)])
    with pytest.raises(InputError, match="http_port 8405 is bound twice on the balancer \\(also metrics_port\\)"):
        render_balancer_files(BalancerGlobals(), [BalancerConfig("chat", TWO, http_port=8405)])


# --- bad input ------------------------------------------------------------------------------------------

R0 = TWO[0]


@pytest.mark.parametrize("config, message", [
    (BalancerConfig("chat", ()), "replicas must name at least one replica"),
    (BalancerConfig("chat", (R0, replace(R0, address="10.0.0.9"))), "replicas\\[1\\].name 'node-a-r0' is given twice"),
    (BalancerConfig("chat", (R0, replace(R0, name="b"))), "replicas\\[1\\].http_port 10.0.0.1 port 8100 is already"),
    (BalancerConfig("chat", (replace(R0, grpc_port=8100),)), "replicas\\[0\\].grpc_port 10.0.0.1 port 8100 is already"),
    (BalancerConfig("chat", (replace(R0, http_port=70000),)), "replicas\\[0\\].http_port must be at most 65535"),
    (BalancerConfig("chat", (replace(R0, grpc_port=0),)), "replicas\\[0\\].grpc_port must be at least 1"),
    (BalancerConfig("chat", (replace(R0, http_port=True),)), "replicas\\[0\\].http_port must be a number"),
    (BalancerConfig("chat", (replace(R0, maxconn=0),)), "replicas\\[0\\].maxconn must be at least 1"),
    (BalancerConfig("chat", (replace(R0, name="a b"),)), "replicas\\[0\\].name must be letters"),
    (BalancerConfig("chat", (replace(R0, name="a/b"),)), "replicas\\[0\\].name must be letters"),
    (BalancerConfig("chat", (replace(R0, address="10.0.0.1 backup"),)), "replicas\\[0\\].address must be an IP"),
    (BalancerConfig("chat", (replace(R0, address="10.1"),)), "replicas\\[0\\].address must be an IP"),
    (BalancerConfig("chat", (replace(R0, address="-x.example"),)), "replicas\\[0\\].address must be an IP"),
    (BalancerConfig("chat", (replace(R0, address="fe80::1%eth0"),)), "replicas\\[0\\].address must be an IP"),
    (BalancerConfig("chat", ("node-a",)), "replicas\\[0\\] must be a BalancedReplica"),
    (BalancerConfig("chat", TWO, http_port=8001), "grpc_port 8001 is the same port as http_port"),
    (BalancerConfig("chat", TWO, grpc_port=65536), "grpc_port must be at most 65535"),
    (BalancerConfig("chat", TWO, max_queue=0), "max_queue must be at least 1"),
    (BalancerConfig("chat", TWO, queue_timeout_ms=2.5), "queue_timeout_ms must be a whole number"),
    (BalancerConfig("chat", TWO, server_timeout_s="900"), "server_timeout_s must be a number"),
    (BalancerConfig("chat", TWO, check_interval_ms=10), "check_interval_ms must be at least 100"),
    (BalancerConfig("chat", TWO, keys_file="/etc/keys file"), "keys_file must be an absolute path"),
    (BalancerConfig("chat", TWO, keys_file="keys"), "keys_file must be an absolute path"),
    (BalancerConfig("chat", TWO, keys_file="/etc/'keys'"), "keys_file must be an absolute path"),
    (BalancerConfig("chat", TWO, tls_pem="/etc/#door.pem"), "tls_pem must be an absolute path"),
    (BalancerConfig("chat", TWO, tls_pem="/etc/../door.pem"), "tls_pem must be an absolute path"),
    (BalancerConfig("chat", TWO, tls_pem="/etc/$HOME.pem"), "tls_pem must be an absolute path"),
    (BalancerConfig("chat", TWO, bind_address="localhost"), "bind_address must be '\\*' or an IP address"),
    (BalancerConfig("chat x", TWO), "deployment 'chat x' is not allowed"),
    (BalancerConfig("../chat", TWO), "deployment '../chat' is not allowed"),
])
def test_a_bad_deployment_is_refused_naming_the_field(config, message):
    with pytest.raises(InputError, match=message) as refused:
        render_deployment(config)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("g, message", [
    (BalancerGlobals(stats_socket="/run/haproxy/admin sock"), "stats_socket must be an absolute path"),
    (BalancerGlobals(stats_socket="/run/" + "s" * 120), "stats_socket must be an absolute path"),
    (BalancerGlobals(metrics_port=0), "metrics_port must be at least 1"),
    (BalancerGlobals(maxconn=-5), "maxconn must be at least 1"),
    (BalancerGlobals(metrics_address="0.0.0.0 ssl"), "metrics_address must be"),
])
def test_bad_globals_are_refused_naming_the_field(g, message):
    with pytest.raises(InputError, match=message):
        render_globals(g)


# --- checked by the real haproxy ------------------------------------------------------------------------

def _self_signed_pem(path: Path) -> Path:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return path


def _eight(port: int = 9000) -> tuple[BalancedReplica, ...]:
    return tuple(BalancedReplica(f"node-{i // 4}-r{i % 4}", f"10.0.{i // 4}.1", port + 10 * (i % 4),
                                 port + 10 * (i % 4) + 1, 64) for i in range(8))


@pytest.mark.parametrize("variant", ["plain", "keys", "tls", "no_grpc", "one_replica", "eight_replicas",
                                     "ipv6_and_names", "two_deployments"])
def test_every_variant_is_a_configuration_haproxy_accepts(tmp_path, variant):
    keys = tmp_path / "chat.keys"
    keys.write_text("key-one\nkey-two\n")
    g = BalancerGlobals(stats_socket=str(tmp_path / "admin.sock"))
    plain = BalancerConfig("chat", TWO)
    configs = {
        "plain": [plain],
        "keys": [replace(plain, keys_file=str(keys))],
        "tls": [replace(plain, tls_pem=str(_self_signed_pem(tmp_path / "door.pem")), keys_file=str(keys))],
        "no_grpc": [replace(plain, grpc_port=None)],
        "one_replica": [replace(plain, replicas=TWO[:1])],
        "eight_replicas": [replace(plain, replicas=_eight())],
        "ipv6_and_names": [replace(plain, replicas=(replace(TWO[0], address="::1"),
                                                    replace(TWO[1], address="localhost")))],
        "two_deployments": [plain, BalancerConfig("code", _eight(), 9000, 9001, max_queue=8, keys_file=str(keys))],
    }[variant]
    checked = haproxy_check(write_files(tmp_path / "conf", g, *configs))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Configuration file is valid" in checked.stdout + checked.stderr
    assert "WARNING" not in checked.stdout + checked.stderr, checked.stderr  # e.g. a directive it would ignore


@pytest.mark.parametrize("missing", ["tls_pem", "keys_file"])
def test_haproxy_refuses_a_door_whose_file_is_missing(tmp_path, missing):
    config = replace(BalancerConfig("chat", TWO), **{missing: str(tmp_path / "absent")})
    checked = haproxy_check(write_files(tmp_path / "conf", BalancerGlobals(stats_socket=str(tmp_path / "s")), config))
    assert checked.returncode != 0
    assert str(tmp_path / "absent") in checked.stdout + checked.stderr


# --- behaviour through a real haproxy -------------------------------------------------------------------

EVENTS = 5
EVENT_GAP_S = 0.1


class _ReplicaHandler(BaseHTTPRequestHandler):
    """Triton's answers, shrunk: ready, a generate that takes the replica's delay, a stream of events."""

    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args):
        pass

    def do_GET(self):
        self._answer()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._answer()

    def _answer(self):
        replica: FakeReplica = self.server.replica
        if self.request_version == "HTTP/1.0":  # HAProxy's health check; the door forwards in HTTP/1.1
            return self._json({})
        replica.seen.append((self.path, self.headers.get("authorization")))
        if replica.fault == "drop" and self.command == "POST":  # it dies under the request: not a byte back
            self.close_connection = True
            return None
        if self.path.endswith("/generate_stream"):
            return self._stream()
        time.sleep(replica.delay_s if self.path.endswith("/generate") else 0)
        self._json({"text_output": "hello", "replica": replica.name})

    def _json(self, data):
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Replica", self.server.replica.name)
        self.end_headers()
        self.wfile.write(body)

    def _stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Replica", self.server.replica.name)
        self.end_headers()
        for index in range(EVENTS):
            if index:
                time.sleep(EVENT_GAP_S)
            event = f"data: {json.dumps({'text_output': f't{index}'})}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            if self.server.replica.fault == "cut":  # it dies after its first event: the connection closes
                self.wfile.flush()
                self.close_connection = True
                return
        self.wfile.write(b"0\r\n\r\n")


class FakeReplica:
    """A Triton replica on 127.0.0.1, in threads: its HTTP port, and with grpc=True its gRPC port, whose
    calls answer raw bytes, name the replica in their trailing metadata and take the replica's delay."""

    def __init__(self, name: str, delay_s: float = 0.0, grpc: bool = False, fault: str | None = None):
        # fault "drop": every POST is read and the connection closed with no answer; "cut": a stream ends after
        # its first event, the connection closed without the last chunk (health checks pass either way)
        self.name, self.delay_s, self.seen, self.fault = name, delay_s, [], fault
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _ReplicaHandler)
        self.server.daemon_threads = True
        self.server.replica = self
        self.server.handle_error = lambda *args: None  # HAProxy ends each health check with a reset
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.running = True
        self.grpc_server, self.grpc_port = self._grpc() if grpc else (None, server_port())

    def _grpc(self):
        import grpc
        from concurrent import futures

        def answering(method: str):
            def call(request: bytes, context) -> bytes:
                self.seen.append((method, dict(context.invocation_metadata()).get("authorization")))
                time.sleep(self.delay_s)
                context.set_trailing_metadata((("x-replica", self.name),))
                return b""
            return call

        server = grpc.server(futures.ThreadPoolExecutor(8))
        handlers = {name: grpc.unary_unary_rpc_method_handler(answering(name)) for name in GRPC_CALLS}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("inference.GRPCInferenceService",
                                                                              handlers),))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        return server, port

    def stop(self):
        if self.running:
            self.running = False
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(5)
            if self.grpc_server:
                self.grpc_server.stop(0).wait(5)

    def as_balanced(self, maxconn: int = 8) -> BalancedReplica:
        return BalancedReplica(self.name, "127.0.0.1", self.port, self.grpc_port, maxconn)


GRPC_CALLS = ("ServerLive", "ModelInfer", "RepositoryIndex", "RepositoryModelLoad", "RepositoryModelUnload",
              "LogSettings", "TraceSetting", "SystemSharedMemoryRegister", "CudaSharedMemoryStatus",
              "ModelConfig", "ModelStatistics")


@pytest.fixture
def start_door(tmp_path):
    """start_door(replicas, **config) -> a Door in front of them; stopped (and the replicas) at the end."""
    started: list = []

    def start(replicas: list[FakeReplica], maxconn: int = 8, grpc: bool = False, **fields) -> Door:
        started.extend(replicas)
        config = BalancerConfig("chat", tuple(r.as_balanced(maxconn) for r in replicas), http_port=server_port(),
                                grpc_port=server_port() if grpc else None, check_interval_ms=100,
                                bind_address="127.0.0.1", **fields)
        door = Door(tmp_path / f"door{len(started)}", config)
        started.append(door)
        return door

    yield start
    for thing in reversed(started):
        thing.stop()


def _json(body: bytes) -> dict:
    return json.loads(body.decode())


def test_requests_spread_over_both_replicas(start_door):
    door = start_door([FakeReplica("a"), FakeReplica("b")])
    answered = [door.ask("/v2/models/m/generate") for _ in range(6)]
    assert [status for status, *_ in answered] == [200] * 6
    assert {headers["X-Replica"] for _, headers, *_ in answered} == {"a", "b"}
    with ThreadPoolExecutor(8) as pool:
        at_once = list(pool.map(lambda _: door.ask("/v2/models/m/generate"), range(8)))
    assert {headers["X-Replica"] for _, headers, *_ in at_once} == {"a", "b"}


def test_a_drained_replica_takes_no_new_request_by_the_names_the_config_gives(start_door):
    door = start_door([FakeReplica("a"), FakeReplica("b")])
    assert door.admin(f"set server {http_backend('chat')}/a state drain").strip() == ""
    assert door.server_status("a") == "DRAIN"
    assert {door.ask("/v2/models/m/generate")[1]["X-Replica"] for _ in range(4)} == {"b"}
    door.admin(f"set server {http_backend('chat')}/b state drain")
    status, _, body, seconds = door.ask("/v2/models/m/generate")  # a drained replica counts as none
    assert (status, _json(body)["reason"]) == (503, "no_replica") and seconds < 0.5
    door.admin(f"set server {http_backend('chat')}/a state ready")
    door.admin(f"set server {http_backend('chat')}/b state ready")
    assert {door.ask("/v2/models/m/generate")[1]["X-Replica"] for _ in range(4)} == {"a", "b"}


def test_the_prometheus_exporter_reports_the_doors(start_door):
    door = start_door([FakeReplica("a")])
    connection = http.client.HTTPConnection("127.0.0.1", door.metrics_port, timeout=10)
    connection.request("GET", "/metrics")
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    assert response.status == 200
    assert f'haproxy_backend_current_queue{{proxy="{http_backend("chat")}"}} 0' in text
    assert f'haproxy_server_max_queue{{proxy="{http_backend("chat")}",server="a"}}' in text


def test_the_tls_door_offers_http2_and_serves_http1(start_door, tmp_path):
    pem = _self_signed_pem(tmp_path / "door.pem")
    door = start_door([FakeReplica("a")], tls_pem=str(pem))
    context = ssl.create_default_context(cafile=str(pem))
    context.set_alpn_protocols(["h2", "http/1.1"])
    with socket.create_connection(("127.0.0.1", door.port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            assert tls.selected_alpn_protocol() == "h2"
    context = ssl.create_default_context(cafile=str(pem))
    connection = http.client.HTTPSConnection("127.0.0.1", door.port, timeout=10, context=context)
    connection.request("POST", "/v2/models/m/generate", body=b"{}")
    response = connection.getresponse()
    assert (response.status, json.loads(response.read())["replica"]) == (200, "a")
    connection.close()
    plain = http.client.HTTPConnection("127.0.0.1", door.port, timeout=5)
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        plain.request("GET", "/v2/health/ready")
        plain.getresponse()
    plain.close()


def test_generate_stream_events_arrive_as_they_are_sent(start_door):
    door = start_door([FakeReplica("a")])
    connection = http.client.HTTPConnection("127.0.0.1", door.port, timeout=10)
    started = time.monotonic()
    connection.request("POST", "/v2/models/m/generate_stream", body=b'{"text_input": "hi"}')
    response = connection.getresponse()
    arrivals = []
    while len(arrivals) < EVENTS and (line := response.readline()):
        if line.startswith(b"data: "):
            arrivals.append(time.monotonic() - started)
    connection.close()
    assert response.status == 200 and response.headers["Content-Type"] == "text/event-stream"
    assert len(arrivals) == EVENTS
    gaps = [later - earlier for earlier, later in zip(arrivals, arrivals[1:])]
    # buffered, they would all come at the end; held for fuller packets, late and in bursts
    assert arrivals[0] < 0.5 * arrivals[-1], arrivals
    assert all(EVENT_GAP_S * 0.5 < gap < EVENT_GAP_S * 2 for gap in gaps), gaps


@pytest.mark.parametrize("path", ["/v2/repository/index", "/v2/repository/models/m/load", "/v2/logging",
                                  "/v2/trace/setting", "/v2/systemsharedmemory/status", "/v2/cudasharedmemory/status",
                                  "/metrics", "/v2/models/stats", "/v2/models/m/stats", "/v2/models/m/config",
                                  "/v2/models/m/versions/1/stats", "/v2/models/../repository/index", "/v2/"])
def test_paths_that_are_not_inference_are_refused_with_json(start_door, path):
    replica = FakeReplica("a")
    door = start_door([replica])
    status, headers, body, _ = door.ask(path)
    assert (status, headers["Content-Type"], _json(body)["reason"]) == (403, "application/json", "not_exposed")
    assert replica.seen == []


def test_inference_health_and_metadata_paths_pass(start_door):
    replica = FakeReplica("a")
    door = start_door([replica])
    for path in ["/v2", "/v2/health/live", "/v2/health/ready", "/v2/models/m", "/v2/models/m/ready",
                 "/v2/models/m/versions/2", "/v2/models/m/versions/2/ready", "/v2/models/m/infer",
                 "/v2/models/m/versions/2/generate", "/v2/models/m/generate?x=1"]:
        assert door.ask(path, method="GET")[0] == 200, path
    assert len(replica.seen) == 10


def test_an_api_key_is_needed_and_stays_at_the_door(start_door, tmp_path):
    keys = tmp_path / "chat.keys"
    keys.write_text("# the chat team's keys\nkey-one\nkey-two\n")
    replica = FakeReplica("a")
    door = start_door([replica], keys_file=str(keys))
    for headers in [{}, {"Authorization": "Bearer key-three"}, {"Authorization": "Basic a2V5LW9uZQ=="},
                    {"Authorization": "key-one"}, {"Authorization": "Bearer key-on"}]:
        status, answer, body, _ = door.ask("/v2/models/m/generate", headers=headers)
        assert (status, answer["Content-Type"], _json(body)["reason"]) == (401, "application/json", "unauthorized")
        assert answer["WWW-Authenticate"] == "Bearer"
    assert replica.seen == []
    status, answer, body, _ = door.ask("/v2/models/m/generate", headers={"Authorization": "Bearer key-two"})
    assert (status, _json(body)["replica"]) == (200, "a")
    assert replica.seen == [("/v2/models/m/generate", None)]
    assert door.ask("/v2/health/ready", method="GET")[0] == 200
    assert door.ask("/v2/repository/index", headers={"Authorization": "Bearer key-two"})[0] == 403


def _post(door: Door, path: str, body: bytes) -> tuple[int, str | None, int, bool]:
    """(status, replica, events, whole) of one POST through the HTTP door, read to its end; whole: the answer came
    complete (a stream cut before its last chunk is not)."""
    connection = http.client.HTTPConnection("127.0.0.1", door.port, timeout=10)
    try:
        connection.request("POST", path, body=body)
        response = connection.getresponse()
        try:
            text, whole = response.read(), True
        except http.client.IncompleteRead as cut:
            text, whole = cut.partial, False
        return response.status, response.headers["X-Replica"], text.count(b"data: "), whole
    finally:
        connection.close()


def _backend_row(door: Door, backend: str) -> dict:
    return next(row for row in csv.DictReader(io.StringIO(door.admin("show stat").removeprefix("# ")))
                if (row["pxname"], row["svname"]) == (backend, "BACKEND"))


def test_a_request_a_replica_loses_before_answering_is_answered_by_another(start_door):
    a, b = FakeReplica("a", fault="drop"), FakeReplica("b")
    door = start_door([a, b])
    answers = [_post(door, "/v2/models/m/generate", b'{"text_input": "hi"}') for _ in range(6)]
    answers += [_post(door, "/v2/models/m/generate_stream", b'{"text_input": "hi"}') for _ in range(2)]
    assert [(status, replica, whole) for status, replica, _, whole in answers] == [(200, "b", True)] * 8
    assert [events for *_, events, _ in answers[6:]] == [EVENTS] * 2
    # a took some of them (balanced) and lost each: every one was sent again, to b, once
    assert 1 <= len(a.seen) and len(b.seen) == 8
    assert int(_backend_row(door, http_backend("chat"))["wredis"]) == len(a.seen)


def test_a_stream_cut_after_its_first_event_is_not_replayed(start_door):
    a, b = FakeReplica("a", fault="cut"), FakeReplica("b")
    door = start_door([a, b])
    answers = [_post(door, "/v2/models/m/generate_stream", b'{"text_input": "hi"}') for _ in range(6)]
    cut = [answer for answer in answers if not answer[3]]
    assert sorted(set(answers)) == sorted({(200, "a", 1, False), (200, "b", EVENTS, True)} & set(answers))
    # each stream a began is cut at the client, never begun again on b
    assert 1 <= len(cut) == len(a.seen) and len(b.seen) == 6 - len(cut)
    assert int(_backend_row(door, http_backend("chat"))["wredis"]) == 0


def test_a_request_too_big_for_haproxys_buffer_is_not_retried(start_door):
    # HAProxy retries only a request it kept whole in one buffer (tune.bufsize, 16 kB): a bigger one lost by a
    # replica fails with 502, as it did without retries
    a, b = FakeReplica("a", fault="drop"), FakeReplica("b")
    door = start_door([a, b])
    big = json.dumps({"text_input": "x" * 32_000}).encode()
    answers = [_post(door, "/v2/models/m/generate", big)[:2] for _ in range(4)]
    assert 1 <= len(a.seen) == answers.count((502, None)) and answers.count((200, "b")) == len(b.seen)
    assert len(a.seen) + len(b.seen) == 4


def test_a_stopped_replica_is_marked_down_and_none_up_answers_no_replica_at_once(start_door):
    a, b = FakeReplica("a"), FakeReplica("b")
    door = start_door([a, b])
    b.stop()
    door.wait_status("b", "DOWN", within_s=3)
    assert {door.ask("/v2/models/m/generate")[1]["X-Replica"] for _ in range(4)} == {"a"}
    a.stop()
    door.wait_status("a", "DOWN", within_s=3)
    status, headers, body, seconds = door.ask("/v2/models/m/generate")
    assert (status, headers["Content-Type"], _json(body)["reason"]) == (503, "application/json", "no_replica")
    assert seconds < 0.5


def test_a_full_queue_answers_queue_full_at_once_while_admitted_requests_complete(start_door):
    door = start_door([FakeReplica("a", delay_s=0.6), FakeReplica("b", delay_s=0.6)], maxconn=1, max_queue=1,
                      queue_timeout_ms=5000)

    def burst(index):
        time.sleep(0.02 * index)  # in order, yet all within the first request's time at a replica
        return door.ask("/v2/models/m/generate")

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(burst, range(8)))
    served = [seconds for status, _, _, seconds in answers if status == 200]
    refused = [(status, headers["Content-Type"], _json(body)["reason"], seconds)
               for status, headers, body, seconds in answers if status != 200]
    assert len(served) == 3, answers  # two at the replicas, one in the queue
    assert sorted(served)[-1] > 1.0  # the queued one waited for a replica
    assert len(refused) == 5
    assert all(what[:3] == (503, "application/json", "queue_full") and what[3] < 0.3 for what in refused), refused


def test_every_request_is_logged_with_haproxys_timers_in_a_ring_the_runtime_api_reads(start_door):
    from tritonops.door.request_log import parse_request_log, show_events

    door = start_door([FakeReplica("a", delay_s=0.3)], maxconn=1, max_queue=1, queue_timeout_ms=5000)
    assert door.ask("/v2/repository/index")[0] == 403

    def burst(index):
        time.sleep(0.05 * index)  # one at the replica, one queued behind it, one finding the queue full
        return door.ask("/v2/models/m/generate")

    with ThreadPoolExecutor(3) as pool:
        assert sorted(answer[0] for answer in pool.map(burst, range(3))) == [200, 200, 503]
    logged = parse_request_log(door.admin(show_events()))  # the health checks are not logged
    assert [(r.status, r.server, r.termination[:2]) for r in logged] == [
        (403, "<NOSRV>", "LR"), (503, "<NOSRV>", "LR"), (200, "a", "--"), (200, "a", "--")]
    refused, full, first, queued = logged
    assert refused.frontend == "tritonops_chat_http_door" and refused.backend == refused.frontend
    assert refused.request == "POST /v2/repository/index HTTP/1.1"
    assert (full.queue_ms, full.connect_ms, full.response_ms) == (-1, -1, -1) and 0 <= full.active_ms < 100
    assert first.backend == http_backend("chat") and first.queue_ms < 100 and first.response_ms >= 290
    assert queued.queue_ms >= 150 and queued.active_ms >= queued.queue_ms + 290  # it waited for the first


def test_a_request_queued_past_the_queue_timeout_gets_queue_timeout(start_door):
    door = start_door([FakeReplica("a", delay_s=1.5)], maxconn=1, max_queue=8, queue_timeout_ms=300)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(door.ask, "/v2/models/m/generate")
        time.sleep(0.1)
        status, headers, body, seconds = door.ask("/v2/models/m/generate")
        assert first.result()[0] == 200
    assert (status, headers["Content-Type"], _json(body)["reason"]) == (503, "application/json", "queue_timeout")
    assert 0.25 < seconds < 1.0


def test_grpc_calls_on_one_connection_are_balanced_call_by_call(start_door):
    door = start_door([FakeReplica("a", grpc=True), FakeReplica("b", grpc=True)], grpc=True)
    answered = [door.call("ModelInfer") for _ in range(6)]
    assert [code.name for code, *_ in answered] == ["OK"] * 6
    assert {trailing["x-replica"] for _, _, trailing, _ in answered} == {"a", "b"}


@pytest.mark.parametrize("method", ["RepositoryIndex", "RepositoryModelLoad", "RepositoryModelUnload", "LogSettings",
                                    "TraceSetting", "SystemSharedMemoryRegister", "CudaSharedMemoryStatus",
                                    "ModelConfig", "ModelStatistics"])
def test_grpc_model_control_is_refused(start_door, method):
    replica = FakeReplica("a", grpc=True)
    door = start_door([replica], grpc=True)
    code, details, _, _ = door.call(method)
    assert (code.name, details.split(":")[0]) == ("PERMISSION_DENIED", "not_exposed")
    assert replica.seen == []


def test_grpc_needs_the_api_key_too(start_door, tmp_path):
    keys = tmp_path / "chat.keys"
    keys.write_text("key-one\n")
    replica = FakeReplica("a", grpc=True)
    door = start_door([replica], grpc=True, keys_file=str(keys))
    for key in [None, "key-two"]:
        code, details, _, _ = door.call("ModelInfer", key=key)
        assert (code.name, details.split(":")[0]) == ("UNAUTHENTICATED", "unauthorized")
    assert door.call("ServerLive")[0].name == "OK"
    assert door.call("ModelInfer", key="key-one")[0].name == "OK"
    assert replica.seen == [("ServerLive", None), ("ModelInfer", None)]


def test_grpc_refusals_for_capacity_are_unavailable_with_the_reason(start_door):
    a = FakeReplica("a", delay_s=1.0, grpc=True)
    door = start_door([a], grpc=True, maxconn=1, max_queue=1, queue_timeout_ms=300)
    with ThreadPoolExecutor(4) as pool:
        calls = [pool.submit(door.call, "ModelInfer")]
        time.sleep(0.2)
        calls.append(pool.submit(door.call, "ModelInfer"))  # queued: it times out
        time.sleep(0.1)
        calls.append(pool.submit(door.call, "ModelInfer"))  # the queue holds one already
        answers = [call.result() for call in calls]
    assert [(code.name, details.split(":")[0]) for code, details, *_ in answers] == [
        ("OK", ""), ("UNAVAILABLE", "queue_timeout"), ("UNAVAILABLE", "queue_full")]
    a.stop()
    door.wait_status("a", "DOWN", within_s=3, backend=grpc_backend("chat"))
    code, details, _, seconds = door.call("ModelInfer")
    assert (code.name, details.split(":")[0]) == ("UNAVAILABLE", "no_replica") and seconds < 0.5


@pytest.mark.parametrize("change, said", [
    ({"routing": "fastest"}, "routing must be leastconn or prefix, not 'fastest'"),
    ({"routing": "prefix", "prefix_bytes": 0}, "prefix_bytes"),
    ({"routing": "prefix", "prefix_bytes": 9000}, "prefix_bytes"),
    ({"routing": "prefix", "balance_factor": 50}, "balance_factor must be 0 (no bound) or at least 100"),
])
def test_a_bad_routing_setting_is_refused_before_any_text(change, said):
    from dataclasses import replace

    from tritonops.render.door_config import BalancedReplica, BalancerConfig, render_deployment

    config = BalancerConfig("chat", (BalancedReplica("a-r0", "10.0.0.1", 8000, 8001, 8),))
    with pytest.raises(InputError, match=re.escape(said)):
        render_deployment(replace(config, **change))


def test_a_door_routing_by_prefix_needs_the_balancer_to_load_its_lua_script():
    from tritonops.render.door_config import (BalancedReplica, BalancerConfig, BalancerGlobals,
                                              render_balancer_files, server_ids)

    config = BalancerConfig("chat", (BalancedReplica("a-r0", "10.0.0.1", 8000, 8001, 8),), routing="prefix")
    with pytest.raises(InputError, match="must load the prefix key's Lua script"):
        render_balancer_files(BalancerGlobals(), [config])
    files = render_balancer_files(BalancerGlobals(lua_scripts=("/etc/haproxy/tritonops-lua/k-1.lua",)), [config])
    assert "    lua-load /etc/haproxy/tritonops-lua/k-1.lua\n" in files["00-tritonops.cfg"]
    # ids from names: the same server, the same id, whatever else the backend holds
    assert server_ids(["a-r0", "b-r0"])["a-r0"] == server_ids(["a-r0"])["a-r0"] == server_ids(["c", "a-r0"])["a-r0"]
