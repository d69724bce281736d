"""Ports on 127.0.0.1 for tests that start servers or need one that answers nothing."""

import socket


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (just bound and let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
