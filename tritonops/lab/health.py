"""Is a lab host up? sshd answers on its published port with an SSH banner."""

from __future__ import annotations

import socket

from tritonops.waiting import wait_until


def sshd_answers(address: str, port: int, timeout_s: float = 2.0) -> bool:
    try:
        with socket.create_connection((address, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            return sock.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def wait_for_sshd(address: str, port: int, timeout_s: float = 30.0) -> bool:
    return bool(wait_until(lambda: sshd_answers(address, port), timeout_s=timeout_s, interval_s=0.3,
                           max_interval_s=1.0))
