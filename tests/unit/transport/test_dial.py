"""The TCP connection dialled before paramiko loads (transport/dial.py): used by the SSH transport as it
is (never a second connection), closed when the handshake fails, Nagle off, not for proxied hosts."""

import socket
import threading

import pytest

from tests.support.network import closed_port
from tritonops.transport.base import Unreachable
from tritonops.transport.dial import dial_direct
from tritonops.transport.sessions import open_transport
from tritonops.transport.spec import ConnectionSpec


class SilentServer:
    """Accepts TCP connections and never speaks SSH; counts them and sees each one closed."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        self.closed = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    def _drain(self, conn):
        with conn:
            while conn.recv(4096):
                pass
        self.closed.set()


@pytest.fixture
def silent():
    server = SilentServer()
    yield server
    server.listener.close()


def test_the_early_connection_is_the_one_used_and_closed_when_the_handshake_fails(silent):
    spec = ConnectionSpec(name="mute", host="127.0.0.1", port=silent.port, user="root", connect_timeout_s=0.5)
    with pytest.raises(Unreachable) as caught:
        open_transport(spec)
    assert "mute" in str(caught.value) or "127.0.0.1" in str(caught.value)
    assert silent.accepted == 1  # dialled once, before paramiko: not again by the transport
    assert silent.closed.wait(5)


def test_early_connections_have_nagle_off_and_proxied_hosts_get_none(silent):
    sock = dial_direct(ConnectionSpec(name="h", host="127.0.0.1", port=silent.port))
    with sock:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    assert dial_direct(ConnectionSpec(name="j", host="10.0.0.1", proxy_jump="bastion")) is None
    assert dial_direct(ConnectionSpec(name="c", host="10.0.0.1", proxy_command="nc %h %p")) is None


def test_a_refused_early_connection_is_reported_as_the_transport_would(silent):
    port = closed_port()
    spec = ConnectionSpec(name="ghost", host="127.0.0.1", port=port, user="root", connect_timeout_s=3)
    assert isinstance(dial_direct(spec), ConnectionRefusedError)
    with pytest.raises(Unreachable, match=rf"cannot connect to root@127.0.0.1:{port}: .*[Rr]efused"):
        open_transport(spec)
