"""SSH transport: a fabric Connection per host, strict host keys, timeouts."""

from __future__ import annotations

import getpass
import os
import select
import socket
import subprocess
import threading
import time

import paramiko
from fabric import Config, Connection

from tritonops.transport.base import Traffic, CommandResult, CommandTimeout, HostKeyRefused, Unreachable
from tritonops.transport.host_keys import AcceptNewHostKey, RefuseUnknownHostKey, changed_key_message
from tritonops.transport.proxy import ProxyValues, parse_jump_hops, proxy_command_line
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


class ProxyProcess(paramiko.ProxyCommand):
    """paramiko's ProxyCommand, told apart from a slow one when the command has ended.

    paramiko (5.1) reads a finished command's stdout as an endless stream of nothing, so a
    ProxyCommand that failed (a missing program, a refused bastion) spins until the banner timeout.
    An empty read here means the command ended: paramiko hears a closed connection at once.
    Its stderr is read all along (a chatty `ssh -v -W` would otherwise fill the pipe and stall),
    keeping the end of it to say why it ended.
    """

    _ended: str | None = None  # how it ended, once known
    _killed = False  # we stopped it: how it ended says nothing about why the connection failed
    STDERR_KEPT = 4096

    def __init__(self, command_line: str):
        super().__init__(command_line)
        self._stderr_tail = b""
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True, name="proxy-stderr")
        self._stderr_reader.start()

    def _read_stderr(self) -> None:
        try:
            for chunk in iter(lambda: os.read(self.process.stderr.fileno(), 65536), b""):
                self._stderr_tail = (self._stderr_tail + chunk)[-self.STDERR_KEPT:]
        except (OSError, ValueError):
            pass  # closed under us by close()

    def recv(self, size: int) -> bytes:
        buffer = b""
        started = time.monotonic()
        while len(buffer) < size:
            wait = None
            if self.timeout is not None:
                wait = self.timeout - (time.monotonic() - started)
                if wait <= 0:
                    if buffer:
                        return buffer
                    raise socket.timeout()
            ready, _, _ = select.select([self.process.stdout], [], [], wait)
            if ready:
                chunk = os.read(self.process.stdout.fileno(), size - len(buffer))
                if not chunk:
                    return buffer
                buffer += chunk
        return buffer

    def ended(self) -> str | None:
        """'exit N: last line of its stderr' when the command ended by itself (waits a moment), else None."""
        if self._ended is None and not self._killed:
            try:
                code = self.process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                return None
            self._stderr_reader.join(timeout=0.5)  # the rest of what it said
            lines = self._stderr_tail.decode(errors="replace").strip().splitlines()
            self._ended = f"exit {code}" + (f": {' '.join(lines[-1].split())}" if lines else "")
        return self._ended

    def close(self) -> None:
        try:
            self.process.wait(timeout=0.05)  # a command that is ending: let it finish and tell why
        except subprocess.TimeoutExpired:
            self._killed = True
            super().close()  # SIGTERM
            try:
                self.process.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        else:
            self.ended()  # what it said, kept before its pipes close (paramiko closes it on failure)
        self._stderr_reader.join(timeout=0.5)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


class _Connection(Connection):
    """fabric's Connection, with the two gateways tritonops uses made exact.

    A string gateway is a finished ProxyCommand line (tritonops.transport.proxy): it is run as it
    is. fabric 3.2 would pass it through a throw-away SSHConfig, which expands %h/%p/%r/~ a second
    time (unquoted) in text already expanded and quoted, and cuts it at newlines.
    A Connection gateway is an already-open bastion; its refusal to forward becomes Unreachable.
    """

    spec: ConnectionSpec | None = None  # real attributes: fabric's DataProxy would store others in config
    proxy: ProxyProcess | None = None

    def open_gateway(self):
        if isinstance(self.gateway, str):
            self.proxy = ProxyProcess(self.gateway)
            return self.proxy
        try:
            return super().open_gateway()
        except paramiko.ChannelException as exc:
            bastion = self.gateway.spec.label if self.gateway.spec else self.gateway.host
            raise Unreachable(f"bastion {bastion} could not open a connection to {self.host}:{self.port}: "
                              f"{exc.text or exc.code}") from exc


def _hop_specs(spec: ConnectionSpec) -> list[ConnectionSpec]:
    """The ProxyJump bastions in the order they are reached; each checked like any target.

    A bastion uses the target's key files, known_hosts file, host-key policy and timeout (never a
    laxer one); its own user and port come from the hop, else the local user and port 22.
    """
    if spec.proxy_command or not spec.proxy_jump:
        return []
    return [ConnectionSpec(name=f"bastion for {spec.name}", host=hop.host, port=hop.port, user=hop.user,
                           key_files=spec.key_files, known_hosts_file=spec.known_hosts_file,
                           strict_host_key_checking=spec.strict_host_key_checking,
                           connect_timeout_s=spec.connect_timeout_s)
            for hop in parse_jump_hops(spec.proxy_jump, spec.name)]


def _proxy_command_line(spec: ConnectionSpec) -> str | None:
    if not spec.proxy_command:
        return None
    values = ProxyValues(host=spec.host, port=spec.port or 22, user=spec.user or getpass.getuser(), name=spec.name)
    return proxy_command_line(spec.proxy_command, values, spec.name)


def _connection(spec: ConnectionSpec, accept_new: bool, gateway: "str | _Connection | None") -> _Connection:
    connect_kwargs: dict = {"banner_timeout": spec.connect_timeout_s, "auth_timeout": spec.connect_timeout_s}
    if spec.key_files:
        connect_kwargs["key_filename"] = [os.path.expanduser(path) for path in spec.key_files]
        connect_kwargs["look_for_keys"] = False
    if spec.password:
        connect_kwargs["password"] = spec.password
    # ~/.ssh/config was applied when the inventory resolved the spec: fabric must not read it again.
    config = Config(overrides={"load_ssh_configs": False}, lazy=True)
    connection = _Connection(
        host=spec.host, user=spec.user or getpass.getuser(), port=spec.port or 22, config=config,
        connect_timeout=spec.connect_timeout_s, connect_kwargs=connect_kwargs, gateway=gateway,
    )
    connection.spec = spec
    connection.client = _client(spec, accept_new)
    return connection


def _open(connection: _Connection, spec: ConnectionSpec, role: str = "") -> None:
    """Open one SSH connection; every way it can fail becomes one line (HostKeyRefused / Unreachable).

    `role` ("bastion ") says what is being reached when it is not the host itself.
    """
    try:
        connection.open()
    except (Unreachable, paramiko.SSHException, OSError, EOFError) as exc:
        error = _open_error(exc, connection, spec, role)
        _close(connection)
        if error is exc:
            raise
        raise error from exc


def _open_error(exc: Exception, connection: _Connection, spec: ConnectionSpec, role: str) -> Unreachable:
    what = f"{role}{spec.label}"
    if isinstance(exc, paramiko.BadHostKeyException):
        return HostKeyRefused(role + changed_key_message(spec.host, spec.port, _known_hosts_file(spec), exc))
    if isinstance(exc, HostKeyRefused):
        return HostKeyRefused(f"{role}{exc}") if role else exc
    if isinstance(exc, Unreachable):
        return exc
    if isinstance(exc, paramiko.AuthenticationException):
        return Unreachable(f"authentication failed for {what}: {exc}")
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return Unreachable(f"timed out connecting to {what} after {spec.connect_timeout_s:g}s")
    reason = str(exc) or type(exc).__name__
    ended = connection.proxy.ended() if connection.proxy is not None else None
    if ended is not None:
        reason = f"its ProxyCommand ended ({ended})"
    return Unreachable(f"cannot connect to {what}: {' '.join(reason.split())}")


def _close(connection: _Connection) -> None:
    connection.close()
    if connection.proxy is not None:  # fabric closes it only when the SSH session had opened
        connection.proxy.close()


class SshTransport:
    """Commands on one host over SSH. Open with `SshTransport.open(spec)`."""

    def __init__(self, spec: ConnectionSpec, connection: Connection, bastions: tuple[Connection, ...] = ()):
        self.spec = spec
        self.name = spec.name
        self._connection = connection
        self._bastions = bastions  # open ProxyJump hops, nearest first; fabric leaves them open
        self.traffic = Traffic()

    @classmethod
    def open(cls, spec: ConnectionSpec, *, accept_new_host_keys: bool = False) -> "SshTransport":
        """Connect (through each ProxyJump bastion, or the ProxyCommand); failures raise Unreachable."""
        hops: list[_Connection] = []
        gateway: str | _Connection | None = _proxy_command_line(spec)
        try:
            for hop_spec in _hop_specs(spec):  # ProxyJump a,b: reach a, then b through a, then the host
                hop = _connection(hop_spec, accept_new_host_keys, gateway)
                _open(hop, hop_spec, role="bastion ")
                hops.append(hop)
                gateway = hop
            connection = _connection(spec, accept_new_host_keys, gateway)
            _open(connection, spec)
        except BaseException:
            for hop in reversed(hops):
                _close(hop)
            raise
        return cls(spec, connection, tuple(hops))

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
            self.traffic.add(len(command.encode()) + len(stdin or b""), len(out) + len(err))
            return CommandResult(command, code, out.decode(errors="replace"), err.decode(errors="replace"))
        finally:
            channel.close()

    def close(self) -> None:
        _close(self._connection)
        for bastion in reversed(self._bastions):
            _close(bastion)


def _send_stdin(channel: paramiko.Channel, stdin: bytes | None) -> None:
    """Send stdin, then end-of-file, so the remote command can finish."""
    try:
        if stdin:
            channel.sendall(stdin)
        channel.shutdown_write()
    except (OSError, paramiko.SSHException):
        pass
