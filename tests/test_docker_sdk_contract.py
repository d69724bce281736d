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
