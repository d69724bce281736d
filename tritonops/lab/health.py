"""Is a lab host up? sshd answers on its published port with an SSH banner."""

from __future__ import annotations

import socket
import time


def sshd_answers(address: str, port: int, timeout_s: float = 2.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            return sock.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def wait_for_sshd(address: str, port: int, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if sshd_answers(address, port):
            return True
        time.sleep(0.3)
    return False
