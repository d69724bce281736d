"""SSH transport: a fabric Connection per host, strict host keys, timeouts."""

from __future__ import annotations

import getpass
import os
import socket
import threading
import time

import paramiko
from fabric import Config, Connection

from tritonops.transport.base import CommandResult, CommandTimeout, HostKeyRefused, Unreachable
from tritonops.transport.host_keys import AcceptNewHostKey, RefuseUnknownHostKey, changed_key_message
from tritonops.transport.spec import ConnectionSpec

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"


def _known_hosts_file(spec: ConnectionSpec) -> str:
    return os.path.expanduser(spec.known_hosts_file or DEFAULT_KNOWN_HOSTS)


def _client(spec: ConnectionSpec, accept_new: bool) -> paramiko.SSHClient:
    """A paramiko client that knows only the spec's known_hosts file."""
    known_hosts = _known_hosts_file(spec)
    client = paramiko.SSHClient()
    if os.path.exists(known_hosts):
        client.load_host_keys(known_hosts)
    if accept_new or spec.strict_host_key_checking == "accept-new":
        client.set_missing_host_key_policy(AcceptNewHostKey(known_hosts))
    else:
        client.set_missing_host_key_policy(RefuseUnknownHostKey(known_hosts, HostKeyRefused))
    return client


def _jump_spec(jump: str, via: ConnectionSpec) -> ConnectionSpec:
    user, _, rest = jump.rpartition("@")
    host, port = rest, None
    if rest.startswith("["):
        host, _, tail = rest[1:].partition("]")
        port = int(tail[1:]) if tail.startswith(":") else None
    elif rest.count(":") == 1:
        host, port_text = rest.split(":")
        port = int(port_text)
    return ConnectionSpec(name=jump, host=host, port=port, user=user or None, key_files=via.key_files,
                          known_hosts_file=via.known_hosts_file,
                          strict_host_key_checking=via.strict_host_key_checking,
                          connect_timeout_s=via.connect_timeout_s)


def _gateway(spec: ConnectionSpec, accept_new: bool):
    if spec.proxy_command:
        command = (spec.proxy_command.replace("%h", spec.host).replace("%p", str(spec.port or 22))
                   .replace("%r", spec.user or ""))
        return paramiko.ProxyCommand(command)
    if spec.proxy_jump:
        hops = [hop.strip() for hop in spec.proxy_jump.split(",") if hop.strip()]
        gateway = None
        for hop in hops:  # ProxyJump a,b: reach a first, then b through a
            connection = _connection(_jump_spec(hop, spec), accept_new, gateway)
            gateway = connection
        return gateway
    return None


def _connection(spec: ConnectionSpec, accept_new: bool, gateway=None) -> Connection:
    connect_kwargs: dict = {"banner_timeout": spec.connect_timeout_s, "auth_timeout": spec.connect_timeout_s}
    if spec.key_files:
        connect_kwargs["key_filename"] = [os.path.expanduser(path) for path in spec.key_files]
        connect_kwargs["look_for_keys"] = False
    if spec.password:
        connect_kwargs["password"] = spec.password
    # ~/.ssh/config was applied when the inventory resolved the spec: fabric must not read it again.
    config = Config(overrides={"load_ssh_configs": False}, lazy=True)
    connection = Connection(
        host=spec.host, user=spec.user or getpass.getuser(), port=spec.port or 22, config=config,
        connect_timeout=spec.connect_timeout_s, connect_kwargs=connect_kwargs,
        gateway=gateway if gateway is not None else _gateway(spec, accept_new),
    )
    connection.client = _client(spec, accept_new)
    return connection


class SshTransport:
    """Commands on one host over SSH. Open with `SshTransport.open(spec)`."""

    def __init__(self, spec: ConnectionSpec, connection: Connection):
        self.spec = spec
        self.name = spec.name
        self._connection = connection

    @classmethod
    def open(cls, spec: ConnectionSpec, *, accept_new_host_keys: bool = False) -> "SshTransport":
        connection = _connection(spec, accept_new_host_keys)
        try:
            connection.open()
        except paramiko.BadHostKeyException as exc:
            connection.close()
            raise HostKeyRefused(changed_key_message(spec.host, spec.port, _known_hosts_file(spec), exc)) from exc
        except HostKeyRefused:
            connection.close()
            raise
        except paramiko.AuthenticationException as exc:
            connection.close()
            raise Unreachable(f"authentication failed for {spec.label}: {exc}") from exc
        except (socket.timeout, TimeoutError) as exc:
            connection.close()
            raise Unreachable(f"timed out connecting to {spec.label} after {spec.connect_timeout_s:g}s") from exc
        except (OSError, paramiko.SSHException, EOFError) as exc:
            connection.close()
            reason = str(exc) or type(exc).__name__
            raise Unreachable(f"cannot connect to {spec.label}: {reason}") from exc
        return cls(spec, connection)

    @property
    def ssh_client(self) -> paramiko.SSHClient:
        """The open paramiko client, for protocols that ride the same session (docker dial-stdio)."""
        return self._connection.client

    def run(self, command: str, *, stdin: bytes | None = None, timeout: float | None = None) -> CommandResult:
        transport = self._connection.client.get_transport()
        if transport is None or not transport.is_active():
            raise Unreachable(f"connection to {self.spec.label} was lost")
        channel = transport.open_session()
        try:
            channel.exec_command(command)
            out, err = bytearray(), bytearray()
            threading.Thread(target=_send_stdin, args=(channel, stdin), daemon=True).start()
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                if channel.recv_ready():
                    out += channel.recv(65536)
                elif channel.recv_stderr_ready():
                    err += channel.recv_stderr(65536)
                elif (channel.exit_status_ready() and channel.eof_received) or channel.closed:
                    break  # all output arrived: the server sends EOF after the last byte of both streams
                else:
                    if deadline is not None and time.monotonic() > deadline:
                        raise CommandTimeout(f"command timed out after {timeout:g}s on {self.spec.label}")
                    time.sleep(0.005)
            code = channel.recv_exit_status()
            return CommandResult(command, code, out.decode(errors="replace"), err.decode(errors="replace"))
        finally:
            channel.close()

    def close(self) -> None:
        self._connection.close()


def _send_stdin(channel: paramiko.Channel, stdin: bytes | None) -> None:
    """Send stdin, then end-of-file, so the remote command can finish."""
    try:
        if stdin:
            channel.sendall(stdin)
        channel.shutdown_write()
    except (OSError, paramiko.SSHException):
        pass
