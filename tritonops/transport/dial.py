"""A host's TCP connection, dialled before the SSH library is loaded.

sshd answers a new connection by forking and re-executing itself before it sends its banner (~16 ms
on the lab); loading paramiko with cryptography takes the controller ~80 ms. `dial_direct` starts the
first while the second runs, so the handshake can begin as soon as paramiko is there. Only for hosts
reached directly: a ProxyJump or ProxyCommand host is reached through what paramiko opens.
"""

from __future__ import annotations

import socket

from tritonops.transport.spec import ConnectionSpec


def connect_tcp(spec: ConnectionSpec) -> socket.socket:
    """A TCP connection to the host (each of its addresses in turn, as paramiko would), with Nagle's
    algorithm off. paramiko leaves it on, and an SSH handshake is a run of small messages each answered
    by the peer: with Nagle, a message waited for the ACK of the one before, which the peer delays by up
    to 40 ms. Connection + authentication on the lab: 0.13 s with it, 0.045 s without
    (docs/performance.md)."""
    sock = socket.create_connection((spec.host, spec.port or 22), timeout=spec.connect_timeout_s)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass  # not TCP after all (an exotic stack): the connection works without it
    return sock


def dial_direct(spec: ConnectionSpec) -> socket.socket | OSError | None:
    """The host's connection, or why it could not be made (reported by the SSH transport as if it had
    dialled itself); None for a host reached through a ProxyJump or a ProxyCommand."""
    if spec.proxy_jump or spec.proxy_command:
        return None
    try:
        return connect_tcp(spec)
    except OSError as exc:
        return exc
