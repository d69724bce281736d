"""The docker SDK talking to a host's engine through that host's SSH session.

This is what `docker -H ssh://host` does: each HTTP connection to the engine is an SSH exec
channel running `docker system dial-stdio`. Unlike the SDK's own `ssh://` support, no second
SSH connection is opened (with its own host-key policy and ~/.ssh/config): the channels ride
on the session tritonops already opened with strict host-key checking.

It leans on the SDK's non-public parts, which is why pyproject.toml keeps docker below 8 and
tests/unit/image/test_docker_sdk_contract.py checks each of them against the installed SDK: an
SSHHTTPAdapter subclass (its `_create_paramiko_client` and `_connect` hooks, `pools`, `ssh_host`,
SSHConnectionPool's arguments) mounted on an APIClient through `_custom_adapter` and `_unmount`.
"""

from __future__ import annotations

import docker
from docker.transport.basehttpadapter import BaseHTTPAdapter
from docker.transport.sshconn import SSHConnection, SSHConnectionPool, SSHHTTPAdapter

from tritonops.transport.base import Transport

API_VERSION = "1.41"  # Docker 20.10: the oldest engine tritonops talks to
DEFAULT_TIMEOUT_S = 300
IDLE_CHANNELS = 3  # kept-alive dial-stdio channels per host; more are opened (and closed) on demand


DIAL_STDIO = "docker system dial-stdio"


class _ChannelConnection(SSHConnection):
    """An HTTP connection on a dial-stdio channel that `open_channel` opened (with ansible_become: sudo's,
    the password already sent: transport/become.py) instead of a plain exec of dial-stdio."""

    def __init__(self, open_channel, timeout: float, host):
        super().__init__(None, timeout, host)
        self._open_channel = open_channel

    def connect(self):
        sock = self._open_channel(DIAL_STDIO)
        sock.settimeout(self.timeout)
        self.sock = sock


class _ChannelPool(SSHConnectionPool):
    def __init__(self, open_channel, **kwargs):
        super().__init__(**kwargs)
        self._open_channel = open_channel

    def _new_conn(self):
        return _ChannelConnection(self._open_channel, self.timeout, self.ssh_host)


class _SessionAdapter(SSHHTTPAdapter):
    """SSHHTTPAdapter bound to an already authenticated paramiko client; never closes it. `open_channel`
    (command -> an exec channel running it), when given, opens each dial-stdio channel."""

    def __init__(self, ssh_client, timeout: float, open_channel=None):
        self._session_client = ssh_client
        self._open_channel = open_channel
        super().__init__("ssh://tritonops-session", timeout=timeout, shell_out=False)

    def _create_paramiko_client(self, base_url):
        self.ssh_client = self._session_client
        self.ssh_params = {}

    def _connect(self):  # the session is open already; reconnecting is the transport's job
        pass

    def get_connection(self, url, proxies=None):
        # The SDK's adapter keeps one pool per URL, each holding an idle channel: enough distinct
        # API paths exhaust sshd's MaxSessions (10). One pool per session, few idle channels.
        with self.pools.lock:
            pool = self.pools.get("session")
            if pool is None:
                kwargs = dict(ssh_client=self.ssh_client, timeout=self.timeout, maxsize=IDLE_CHANNELS,
                              host=self.ssh_host)
                pool = SSHConnectionPool(**kwargs) if self._open_channel is None else \
                    _ChannelPool(self._open_channel, **kwargs)
                self.pools["session"] = pool
            return pool

    def close(self):
        BaseHTTPAdapter.close(self)
        self.pools.clear()


def _paramiko_client(transport: Transport):
    client = getattr(transport, "ssh_client", None)  # SshTransport; LocalTransport has none
    if client is None or client.get_transport() is None:
        return None
    return client


def docker_client(transport: Transport, timeout: float = DEFAULT_TIMEOUT_S) -> docker.DockerClient:
    """A docker SDK client for the engine of the host behind `transport`."""
    ssh_client = _paramiko_client(transport)
    if ssh_client is None:  # LocalTransport: this machine's engine
        return docker.DockerClient(base_url="unix:///var/run/docker.sock", version=API_VERSION, timeout=timeout)
    # with ansible_become, dial-stdio runs as the become user (transport/become.py: exec_channel)
    return session_docker_client(ssh_client, timeout, open_channel=getattr(transport, "exec_channel", None))


def session_docker_client(ssh_client, timeout: float = DEFAULT_TIMEOUT_S, open_channel=None) -> docker.DockerClient:
    """A docker SDK client whose every HTTP connection is a `docker system dial-stdio` channel of
    `ssh_client`, an authenticated paramiko client (nothing is sent until a request is made); opened by
    `open_channel(command)` when given."""
    client = docker.DockerClient(base_url="tcp://127.0.0.1:1", version=API_VERSION, timeout=timeout)
    api = client.api
    adapter = _SessionAdapter(ssh_client, timeout, open_channel)
    api._custom_adapter = adapter
    api.mount("http+docker://ssh", adapter)
    api._unmount("http://", "https://")
    api.base_url = "http+docker://ssh"
    return client
