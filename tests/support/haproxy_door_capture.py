"""A real HAProxy (Debian's 2.6, `haproxy -W`) running tritonops' own door configuration (render.door_config, one
deployment "chat" with two replicas on 127.0.0.1), sent a known mix of requests, then read: HAProxy's Prometheus
exporter page and `show stat`. What the balancer figures, status and alert rules are tested on.

    .venv/bin/python -m tests.support.haproxy_door_capture tests/fixtures/haproxy

The requests, in order (tests/fixtures/haproxy/README.md says the same): 3 generate requests answered 200, one the
replica answers 500, one to a path not exposed (403 not_exposed), one without the key (401 unauthorized); two 1 s
requests fill both replicas (maxconn 1 each) and a third waits about 1 s in the queue, then is served; two 2.5 s
requests fill them again, a third waits past the queue timeout (1.5 s: 503 queue_timeout) and a fourth finds the
queue full (max_queue 1: 503 queue_full); both replicas put in maint, one more (503 no_replica); then node-a-r0 is
ready again and node-a-r1 drains, and the page and `show stat` are read.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

from tests.support.haproxy_harness import Replicas, ask
from tests.support.network import server_port
from tritonops.render.door_config import BalancedReplica, BalancerConfig, BalancerGlobals, render_balancer_files

DEPLOYMENT = "chat"
BACKEND = f"tritonops_{DEPLOYMENT}_http"
KEY = "fixture-key-not-a-secret"
SLEEP_S = {"slow": 1.0, "slower": 2.5}


class Replica(http.server.BaseHTTPRequestHandler):
    """/v2/health/ready 200; /v2/models/<m>/generate 200 after SLEEP_S[m] (if any), 500 for model "fail"."""
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.reply()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.reply()

    def reply(self):
        model = self.path.split("/")[3] if self.path.startswith("/v2/models/") else ""
        time.sleep(SLEEP_S.get(model, 0))
        body = b'{"text_output": "hi"}'
        self.send_response(500 if model == "fail" else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def capture(out: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="hxdoor"))
    replicas = []
    for _ in range(2):
        server = Replicas(("127.0.0.1", 0), Replica)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        replicas.append(server)
    (folder / "keys").write_text(KEY + "\n")
    socket, metrics_port, door_port = str(folder / "admin.sock"), server_port(), server_port()
    config = BalancerConfig(DEPLOYMENT, tuple(
        BalancedReplica(f"node-a-r{index}", "127.0.0.1", server.server_address[1], server_port(), 1)
        for index, server in enumerate(replicas)), http_port=door_port, grpc_port=None, queue_timeout_ms=1500,
        max_queue=1, check_interval_ms=100, keys_file=str(folder / "keys"), bind_address="127.0.0.1")
    files = render_balancer_files(BalancerGlobals(stats_socket=socket, metrics_port=metrics_port, maxconn=1000,
                                                  metrics_address="127.0.0.1"), [config])
    for name, text in files.items():
        (folder / name).write_text(text)
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    process = subprocess.Popen([haproxy, "-W", "-f", str(folder)], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    answers: list[int] = []

    def send(path: str, key: str | None = KEY) -> int:
        request = urllib.request.Request(f"http://127.0.0.1:{door_port}{path}", data=b"{}")
        if key:
            request.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                reply.read()
                code = reply.status
        except urllib.error.HTTPError as err:
            code = err.code
        answers.append(code)
        return code

    def at_once(*paths: str, after_s: float = 0.3, during=None) -> None:
        threads = []
        for path in paths:
            threads.append(threading.Thread(target=send, args=(path,)))
            threads[-1].start()
            time.sleep(after_s)
        if during:
            during()
        for thread in threads:
            thread.join()

    def keep(name: str) -> None:
        (out / name).write_text(ask(socket, "show stat"))

    def status_of(server: str) -> str | None:
        lines = ask(socket, f"show stat {BACKEND} -1 -1").splitlines()
        header = lines[0][2:].split(",")
        rows = [dict(zip(header, line.split(","))) for line in lines[1:] if line]
        return next((row["status"] for row in rows if row["svname"] == server), None)

    def up() -> bool:
        return all(status_of(server) == "UP" for server in ("node-a-r0", "node-a-r1"))

    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if up():
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("the door's replicas never came UP")
            time.sleep(0.1)
        for _ in range(3):
            send("/v2/models/m/generate")
        send("/v2/models/fail/generate")
        send("/v2/repository/index")
        send("/v2/models/m/generate", key=None)
        at_once("/v2/models/slow/generate", "/v2/models/slow/generate", "/v2/models/m/generate")
        at_once("/v2/models/slower/generate", "/v2/models/slower/generate", "/v2/models/m/generate",
                "/v2/models/m/generate", during=lambda: keep("door_show_stat_busy.txt"))
        for server in ("node-a-r0", "node-a-r1"):
            ask(socket, f"set server {BACKEND}/{server} state maint")
        keep("door_show_stat_maint.txt")
        send("/v2/models/m/generate")
        ask(socket, f"set server {BACKEND}/node-a-r0 state ready")
        ask(socket, f"set server {BACKEND}/node-a-r1 state drain")
        if Counter(answers) != Counter({200: 8, 500: 1, 403: 1, 401: 1, 503: 3}):
            raise RuntimeError(f"the door answered {answers}, not what the fixture's requests get")
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as page:
            (out / "door_metrics.txt").write_bytes(page.read())
        keep("door_show_stat.txt")
        ask(socket, f"set server {BACKEND}/node-a-r1 state ready")
        replicas[1].shutdown()
        replicas[1].server_close()
        deadline = time.monotonic() + 10
        while status_of("node-a-r1") != "DOWN":
            if time.monotonic() > deadline:
                raise TimeoutError("node-a-r1 never went DOWN")
            time.sleep(0.1)
        keep("door_show_stat_down.txt")
        print(f"answers: {answers}")
    finally:
        process.terminate()
        process.wait(timeout=10)
        for server in replicas:
            server.shutdown()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    capture(Path(sys.argv[1]))
