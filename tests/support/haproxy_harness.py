"""A real HAProxy (Debian's 2.6, `haproxy -W`: master-worker, as on a balancer host) in front of two
small HTTP servers on 127.0.0.1, with its admin stats socket in a temporary folder: what the runtime
API tests talk to and what the fixtures in tests/fixtures/haproxy/ were captured from.

    .venv/bin/python -m tests.support.haproxy_harness tests/fixtures/haproxy    # captures the fixtures again

The servers answer GET / with 200, /slow after 1 s (an in-flight request to drain), /fail with 503.
"""

from __future__ import annotations

import http.server
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.network import server_port

BACKEND = "replicas"
SERVERS = ("r0", "r1")
SLOW_S = 1.0

CONFIG = """\
global
    stats socket {socket} mode 600 level admin
    nbthread 2

defaults
    mode http
    timeout connect 2s
    timeout client 10s
    timeout server 10s

frontend front
    bind 127.0.0.1:{port}
    default_backend {backend}

backend {backend}
    balance leastconn
{servers}
"""


class Replica(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        if self.path == "/slow":
            time.sleep(SLOW_S)
        code = 503 if self.path == "/fail" else 200
        body = f"{self.server.server_address[1]} {self.path}\n".encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Replicas(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # haproxy's layer-4 health checks connect and reset: not an error here


def ask(path: str, command: str, timeout_s: float = 5) -> str:
    """One runtime-API command, the whole answer (the test's own client, not the program under test)."""
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(timeout_s)
        client.connect(path)
        client.sendall(command.encode() + b"\n")
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode()


@dataclass
class Balancer:
    folder: Path
    socket: str = ""
    port: int = 0
    process: subprocess.Popen | None = None
    replicas: dict[str, Replicas] = field(default_factory=dict)

    def ask(self, command: str) -> str:
        return ask(self.socket, command)

    def get(self, path: str, timeout_s: float = 5) -> int:
        """A request through the frontend; its HTTP status."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout_s) as answer:
                answer.read()
                return answer.status
        except urllib.error.HTTPError as err:
            return err.code

    def row(self, server: str) -> dict[str, str]:
        """The server's `show stat` row by column name (the test's own reading, not the parser under test)."""
        lines = self.ask("show stat").splitlines()
        header = lines[0][2:].split(",")
        for line in lines[1:]:
            values = dict(zip(header, line.split(",")))
            if values.get("pxname") == BACKEND and values.get("svname") == server:
                return values
        raise KeyError(server)

    def status(self, server: str) -> str:
        return self.row(server)["status"]

    def wait_for(self, check, timeout_s: float = 5.0, what: str = "") -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                raise TimeoutError(f"haproxy harness: {what} not within {timeout_s} s")
            time.sleep(0.02)

    def in_flight(self, path: str = "/slow") -> threading.Thread:
        """A request sent in a thread; it has reached a server once that server's scur counts it."""
        thread = threading.Thread(target=self.get, args=(path,), daemon=True)
        thread.start()
        return thread

    def stop_replica(self, server: str) -> None:
        replica = self.replicas.pop(server)
        replica.shutdown()
        replica.server_close()

    def stop(self) -> None:
        """haproxy's master stops its worker on SIGTERM; then the replicas stop."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        for name in list(self.replicas):
            self.stop_replica(name)


def start_balancer(folder: Path, *, wait_up: bool = True) -> Balancer:
    """haproxy and its two replicas, started; `wait_up`: until both servers' checks passed (UP, not
    "UP 1/3", which a fresh haproxy reports until its health checks run)."""
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    balancer = Balancer(folder, socket=str(folder / "admin.sock"), port=server_port())
    try:
        lines = []
        for name in SERVERS:
            replica = Replicas(("127.0.0.1", 0), Replica)
            threading.Thread(target=replica.serve_forever, daemon=True).start()
            balancer.replicas[name] = replica
            lines.append(f"    server {name} 127.0.0.1:{replica.server_address[1]} check inter 100ms")
        config = folder / "haproxy.cfg"
        config.write_text(CONFIG.format(socket=balancer.socket, port=balancer.port, backend=BACKEND,
                                        servers="\n".join(lines)))
        log = open(folder / "haproxy.log", "wb")
        balancer.process = subprocess.Popen([haproxy, "-W", "-f", str(config)], stdout=log, stderr=log,
                                            stdin=subprocess.DEVNULL)
        log.close()

        def answering() -> bool:
            if balancer.process.poll() is not None:
                raise RuntimeError(f"haproxy exited: {(folder / 'haproxy.log').read_text()[-2000:]}")
            try:
                return balancer.ask("show info").startswith("Name: HAProxy")
            except OSError:
                return False

        balancer.wait_for(answering, what="the stats socket")
        if wait_up:
            balancer.wait_for(lambda: all(balancer.status(name) == "UP" for name in SERVERS), what="both servers UP")
    except BaseException:
        balancer.stop()
        raise
    return balancer


# --- capturing the fixtures ----------------------------------------------------------------------

def capture(out: Path) -> None:
    """Each fixture file: one command's answer, byte for byte, in the state README.md says."""
    import tempfile

    def keep(name: str, answer: str) -> None:
        (out / name).write_text(answer)
        print(f"{name}: {answer.splitlines()[0][:70] if answer.strip() else '(empty)'}")

    with tempfile.TemporaryDirectory(prefix="hx") as folder:
        balancer = start_balancer(Path(folder), wait_up=False)
        try:
            keep("show_stat_starting.txt", balancer.ask("show stat"))
            balancer.wait_for(lambda: all(balancer.status(name) == "UP" for name in SERVERS), what="UP")
            for path in ("/", "/", "/", "/fail"):
                balancer.get(path)
            keep("show_stat_up.txt", balancer.ask("show stat"))
            keep("show_servers_state_up.txt", balancer.ask("show servers state"))
            keep("show_stat_backend.txt", balancer.ask(f"show stat {BACKEND} -1 -1"))

            balancer.ask(f"set server {BACKEND}/r1 state maint")
            request = balancer.in_flight()
            balancer.wait_for(lambda: balancer.row("r0")["scur"] == "1", what="r0 busy")
            keep("set_server_state_drain.txt", balancer.ask(f"set server {BACKEND}/r0 state drain"))
            keep("show_stat_draining.txt", balancer.ask("show stat"))
            keep("show_servers_state_draining.txt", balancer.ask("show servers state"))
            request.join(5)
            balancer.ask(f"set server {BACKEND}/r0 state ready")
            balancer.ask(f"set server {BACKEND}/r1 state ready")

            balancer.stop_replica("r1")
            balancer.wait_for(lambda: balancer.status("r1") == "DOWN", what="r1 DOWN")
            keep("show_stat_down.txt", balancer.ask("show stat"))
            keep("show_servers_state_down.txt", balancer.ask("show servers state"))

            keep("refused_no_such_backend.txt", balancer.ask("set server nope/r0 state drain"))
            keep("refused_no_such_server.txt", balancer.ask(f"set server {BACKEND}/nope state drain"))
            keep("refused_weight.txt", balancer.ask(f"set server {BACKEND}/r0 weight 300"))
            keep("refused_unknown_command.txt", balancer.ask("frobnicate"))
            keep("refused_show_stat.txt", balancer.ask("show stat nope -1 -1"))
            keep("refused_show_servers_state.txt", balancer.ask("show servers state nope"))

            port = int(balancer.row("r0")["addr"].rsplit(":", 1)[1])  # r0 sent elsewhere, then its checks there
            moved = f"set server {BACKEND}/r0 addr 127.0.0.1 port {port + 1}"
            keep("set_server_addr_port_changed.txt", balancer.ask(moved))
            keep("set_server_addr_unchanged.txt", balancer.ask(moved))
            keep("set_server_check_port.txt", balancer.ask(f"set server {BACKEND}/r0 check-port {port + 1}"))
            keep("refused_set_server_addr.txt", balancer.ask(f"set server {BACKEND}/nope addr 127.0.0.1 port 1"))
        finally:
            balancer.stop()


if __name__ == "__main__":
    capture(Path(sys.argv[1]))


@pytest.fixture(scope="module")
def balancer(tmp_path_factory, request) -> Balancer:
    """A test module's haproxy (Debian's, which scripts/bootstrap.sh installs) and its replicas, stopped after the
    module. `from tests.support.haproxy_harness import balancer` makes it a fixture there."""
    if not shutil.which("haproxy"):
        pytest.fail("haproxy is not installed: scripts/bootstrap.sh installs Debian's")
    started = start_balancer(tmp_path_factory.mktemp("haproxy"))
    request.addfinalizer(started.stop)
    return started
