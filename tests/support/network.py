"""Ports on 127.0.0.1 for tests that start servers or need one that answers nothing.

A port picked for a server another program binds later (haproxy, a replica started in a thread) is picked from a
block of its own per pytest-xdist worker, below the system's ephemeral range: a port the system hands out (a
server bound to port 0, a client's own end) is never one of them, nor one another worker picked, so it is still
free when the server binds it. Within a worker, a port is handed out once."""

import itertools
import os
import socket

from tritonops.lab.testing import worker_index

BLOCK_START, BLOCK_SIZE = 25000, 2000  # the lab's SSH ports are below 25000 (tritonops/lab/testing.py)
_next = itertools.count()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (just bound and let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_port() -> int:
    """A port on 127.0.0.1 free now, for a server to bind: this worker's own, never handed out before in this run."""
    start = BLOCK_START + BLOCK_SIZE * worker_index(os.environ.get("PYTEST_XDIST_WORKER"))
    for _ in range(BLOCK_SIZE):
        port = start + next(_next) % BLOCK_SIZE
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port left in {start}-{start + BLOCK_SIZE - 1}")
