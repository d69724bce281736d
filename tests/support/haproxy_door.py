"""A real haproxy (Debian's 2.6, master-worker) on tritonops' rendered door files, its HTTP door on 127.0.0.1:
started, asked through its doors and its admin socket, stopped. haproxy is installed by scripts/bootstrap.sh: the
tests fail, never skip, without it."""

from __future__ import annotations

import csv
import http.client
import io
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.network import server_port

from tritonops.render.door_config import BalancerConfig, BalancerGlobals, http_backend, render_balancer_files

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def haproxy() -> str:
    if not Path(HAPROXY).exists():
        pytest.fail("haproxy is not installed: scripts/bootstrap.sh installs Debian's (apt-get install haproxy)")
    return HAPROXY


def write_files(folder: Path, g: BalancerGlobals, *configs: BalancerConfig) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in render_balancer_files(g, configs).items():
        (folder / name).write_text(text)
    return folder


def haproxy_check(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([haproxy(), "-c", "-f", str(folder)], capture_output=True, text=True, timeout=30)


class Door:
    """A running haproxy in master-worker mode with the rendered files, its HTTP door on 127.0.0.1."""

    def __init__(self, folder: Path, config: BalancerConfig):
        self.folder, self.config = folder, config
        self.socket = folder / "admin.sock"
        self.port = config.http_port
        self.metrics_port = server_port()
        # HAProxy 2.6 will not start unless it can raise its file limit to about twice the global maxconn
        write_files(folder / "conf", BalancerGlobals(stats_socket=str(self.socket), metrics_port=self.metrics_port,
                                               maxconn=1000, metrics_address="127.0.0.1"), config)
        self.log = open(folder / "haproxy.log", "wb")
        self.process = subprocess.Popen([haproxy(), "-W", "-f", str(folder / "conf")],
                                        stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        # listening, and every server's first check done: until then a server reads "UP 1/3", check INI
        while not self._listening() or any(row["check_status"] in ("", "INI") for row in self.servers()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"haproxy did not start: {(folder / 'haproxy.log').read_text()}")
            time.sleep(0.02)

    def _listening(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return self.socket.exists()
        except OSError:
            return False

    def ask(self, path: str, method: str = "POST", headers: dict | None = None, timeout: float = 10):
        """(status, headers, body, seconds) of one request through the HTTP door."""
        started = time.monotonic()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            body = b'{"text_input": "hi"}' if method == "POST" else None
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.headers, response.read(), time.monotonic() - started
        finally:
            connection.close()

    def call(self, method: str, key: str | None = None, timeout: float = 10):
        """(grpc code, details, trailing metadata, seconds) of one call through the gRPC door, on a
        channel kept for the door: one HTTP/2 connection carries them all."""
        import grpc

        if not hasattr(self, "channel"):
            self.channel = grpc.insecure_channel(f"127.0.0.1:{self.config.grpc_port}")
        metadata = (("authorization", f"Bearer {key}"),) if key else ()
        started = time.monotonic()
        try:
            _, done = self.channel.unary_unary(f"/inference.GRPCInferenceService/{method}").with_call(
                b"", timeout=timeout, metadata=metadata)
            return grpc.StatusCode.OK, "", dict(done.trailing_metadata()), time.monotonic() - started
        except grpc.RpcError as error:
            return error.code(), error.details(), {}, time.monotonic() - started

    def admin(self, command: str) -> str:
        """HAProxy's answer to one command on the stats socket."""
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(self.socket))
            sock.sendall(command.encode() + b"\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        return answer.decode()

    def servers(self) -> list[dict]:
        """`show stat`'s rows of the servers, every backend."""
        rows = csv.DictReader(io.StringIO(self.admin("show stat").removeprefix("# ")))
        return [row for row in rows if row["svname"] not in ("FRONTEND", "BACKEND")]

    def server_status(self, server: str, backend: str | None = None) -> str:
        """The server's status in the HTTP backend ("UP", "DOWN", "DRAIN", "MAINT"...)."""
        backend = backend or http_backend(self.config.deployment)
        for row in self.servers():
            if (row["pxname"], row["svname"]) == (backend, server):
                return row["status"]
        raise AssertionError(f"no server {backend}/{server}")

    def wait_status(self, server: str, wanted: str, within_s: float = 5.0, backend: str | None = None) -> float:
        started = time.monotonic()
        while (status := self.server_status(server, backend)) != wanted:
            if time.monotonic() - started > within_s:
                raise AssertionError(f"{server} is still {status} after {within_s} s, not {wanted}")
            time.sleep(0.05)
        return time.monotonic() - started

    def stop(self):
        if hasattr(self, "channel"):
            self.channel.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.log.close()
