"""The docker SDK's non-public parts that image/docker_ssh.py builds on, checked against the
installed SDK (pyproject.toml keeps docker below 8 for them): a session-bound SSH adapter mounted
on the API client, one channel pool per session, and requests addressed to it. No engine is
reached: the paramiko client is real but never connected, and nothing is sent."""

import inspect

import paramiko
from docker.transport.sshconn import SSHConnectionPool, SSHHTTPAdapter

from tritonops.image.docker_ssh import API_VERSION, IDLE_CHANNELS, _SessionAdapter, session_docker_client


def test_the_hooks_the_session_adapter_overrides_exist_in_the_sdk():
    # overriding a hook the SDK no longer calls would silently open a second SSH connection
    for hook in ("_create_paramiko_client", "_connect", "get_connection", "close"):
        assert callable(getattr(SSHHTTPAdapter, hook, None)), hook
    assert {"base_url", "timeout", "shell_out"} <= set(inspect.signature(SSHHTTPAdapter.__init__).parameters)
    assert {"ssh_client", "timeout", "maxsize", "host"} <= set(inspect.signature(SSHConnectionPool.__init__).parameters)


def test_requests_go_to_the_session_adapter_and_share_one_small_pool():
    ssh_client = paramiko.SSHClient()
    client = session_docker_client(ssh_client, timeout=7)
    api = client.api
    adapter = api.get_adapter(api._url("/images/load"))
    assert isinstance(adapter, _SessionAdapter)
    assert adapter.ssh_client is ssh_client and adapter.timeout == 7
    assert api._url("/images/load") == f"http+docker://ssh/v{API_VERSION}/images/load"
    assert "http://" not in api.adapters and "https://" not in api.adapters  # nothing else can be reached
    pool = adapter.get_connection(api._url("/containers/json"))
    assert isinstance(pool, SSHConnectionPool) and pool.ssh_host == adapter.ssh_host
    assert pool.pool.maxsize == IDLE_CHANNELS and pool.timeout == 7
    assert adapter.get_connection(api._url("/images/json")) is pool  # not one pool (and idle channel) per path
    client.close()
    assert len(adapter.pools) == 0 and ssh_client.get_transport() is None  # the session is its owner's to close


def test_with_become_each_dial_stdio_channel_is_opened_by_the_session_and_used_as_it_comes():
    # transport/become.py's exec_channel: sudo's channel, the password already sent; here a socket pair
    import socket

    from docker.transport.sshconn import SSHConnection

    assert {"ssh_transport", "timeout", "host"} <= set(inspect.signature(SSHConnection.__init__).parameters)
    assert callable(getattr(SSHConnectionPool, "_new_conn", None))
    opened, ends = [], []

    def open_channel(command):
        opened.append(command)
        near, far = socket.socketpair()
        ends.append(far)
        return near

    client = session_docker_client(paramiko.SSHClient(), timeout=9, open_channel=open_channel)
    api = client.api
    pool = api.get_adapter(api._url("/info")).get_connection(api._url("/info"))
    connection = pool._new_conn()
    assert isinstance(connection, SSHConnection) and opened == []  # nothing opened before it is used
    connection.connect()
    assert opened == ["docker system dial-stdio"] and connection.sock.gettimeout() == 9
    connection.sock.sendall(b"GET /_ping")
    assert ends[0].recv(64) == b"GET /_ping"
    for end in (connection.sock, *ends):
        end.close()
    client.close()
