"""The door program (host_programs/door_apply.py) run here as a host runs it, on a balancer's folders in a
temporary folder (`place`, a fixture: import it into the test file), in front of a small HTTP replica."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.network import server_port
from tritonops import host_programs
from tritonops.render.door_config import BalancedReplica, BalancerConfig, BalancerGlobals, render_balancer_files


MODEL_PATH = "/v2/models/m/generate"


def stream_events(handler: http.server.BaseHTTPRequestHandler, events: list[dict], spacing_s: float) -> None:
    """A generate_stream answer as a replica sends it: each event a server-sent `data:` chunk, `spacing_s` apart."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    for event in events:
        data = f"data: {json.dumps(event)}\n\n".encode()
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        handler.wfile.flush()
        time.sleep(spacing_s)
    handler.wfile.write(b"0\r\n\r\n")


class Replica(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self._answer()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def _answer(self):
        if self.path.endswith("/generate_stream"):  # 5 events, 0.3 s apart: a request in flight for 1.5 s
            stream_events(self, [{"text_output": f"w{i}"} for i in range(5)], 0.3)
            return
        body = json.dumps({"text_output": "hello", "port": self.server.server_address[1]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def place(tmp_path):
    """Folders of a balancer in tmp_path, a replica, and whatever haproxy the program started, stopped after."""
    replica = http.server.ThreadingHTTPServer(("127.0.0.1", server_port()), Replica)
    replica.daemon_threads = True
    threading.Thread(target=replica.serve_forever, daemon=True).start()
    where = {"dir": str(tmp_path / "etc" / "tritonops"), "pidfile": str(tmp_path / "run" / "haproxy.pid"),
             "socket": str(tmp_path / "run" / "admin.sock"), "replica": replica.server_address[1],
             "door": server_port(), "metrics": server_port(), "tmp": tmp_path}
    yield where
    replica.shutdown()
    try:
        os.kill(int(Path(where["pidfile"]).read_text().split()[0]), signal.SIGTERM)
    except (OSError, ValueError):
        pass


def files(place, replicas=1, keys_file=None, tls_pem=None, maxconn=8, port=None) -> dict:
    # the one replica server twice, by two names (the renderer refuses one address and port listed twice); `port`:
    # where the first one is
    members = tuple(BalancedReplica(f"node-r{i}", ("127.0.0.1", "localhost")[i],
                                    port if port and i == 0 else place["replica"], place["replica"] + 1, maxconn)
                    for i in range(replicas))
    config = BalancerConfig("chat", members, http_port=place["door"], grpc_port=None, keys_file=keys_file,
                            tls_pem=tls_pem, check_interval_ms=200, bind_address="127.0.0.1")
    return render_balancer_files(BalancerGlobals(stats_socket=place["socket"], metrics_port=place["metrics"],
                                                 maxconn=1000, metrics_address="127.0.0.1"), [config])


def apply(place, wanted, keys_files=(), env=None, **extra):
    body = {"dir": place["dir"], "files": wanted, "remove": [], "pidfile": place["pidfile"],
            "socket": place["socket"], "install": False, "keys_files": list(keys_files), **extra}
    done = subprocess.run([sys.executable, "-c", host_programs.source("door_apply")], input=json.dumps(body),
                          capture_output=True, text=True, timeout=60, env=env)
    return done


def through(place, path=MODEL_PATH, key=None, timeout=5.0):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(f"http://127.0.0.1:{place['door']}{path}", data=b'{"text_input": "hi"}',
                                 headers=headers)
    deadline = time.monotonic() + 10
    while True:
        try:
            with urllib.request.urlopen(req, timeout=timeout) as reply:
                return reply.status, reply.read()
        except urllib.error.HTTPError as err:
            if err.code != 503 or time.monotonic() > deadline:  # 503 until the first health check passed
                return err.code, err.read()
        time.sleep(0.1)
