"""SSH transport: a paramiko client per host (through ProxyJump bastions or a ProxyCommand), strict
host keys, timeouts. docs/performance.md says why paramiko directly (no fabric) and what a connection
costs."""

from __future__ import annotations

import getpass
import os
import select
import socket
import subprocess
import threading
import time
from dataclasses import dataclass

from tritonops.transport.base import Traffic, CommandResult, CommandTimeout, HostKeyRefused, Unreachable
from tritonops.transport.paramiko_lib import paramiko
from tritonops.transport.host_keys import (AcceptNewHostKey, RefuseUnknownHostKey, changed_key_message,
                                          known_hosts_name)
from tritonops.transport.dial import connect_tcp
from tritonops.transport.proxy import ProxyValues, parse_jump_hops, proxy_command_line
from tritonops.transport.spec import ConnectionSpec

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"


def _known_hosts_file(spec: ConnectionSpec) -> str:
    return os.path.expanduser(spec.known_hosts_file or DEFAULT_KNOWN_HOSTS)


def _client(spec: ConnectionSpec, accept_new: bool) -> paramiko.SSHClient:
    """A paramiko client that knows, of the spec's known_hosts file, the keys of this host only."""
    return trust_known_hosts(paramiko.SSHClient(), spec, accept_new)


def trust_known_hosts(client: paramiko.SSHClient, spec: ConnectionSpec, accept_new: bool) -> paramiko.SSHClient:
    """`client` told the keys the spec's known_hosts file holds for this host, and tritonops' policy for a key
    it does not hold (refused, or recorded with accept-new). Also for a client made elsewhere (a fabric
    Connection's, whose AutoAddPolicy this replaces: transport/fabric_adapter.py)."""
    name = known_hosts_name(spec.host, spec.port)
    for key_type, key in known_keys(spec).items():
        client.get_host_keys().add(name, key_type, key)
    client.set_missing_host_key_policy(host_key_policy(spec, accept_new))
    return client


def host_key_policy(spec: ConnectionSpec, accept_new: bool) -> paramiko.MissingHostKeyPolicy:
    """What to do with a key the spec's known_hosts file does not hold: refuse it, or (accept-new) record it."""
    known_hosts = _known_hosts_file(spec)
    if accept_new or spec.strict_host_key_checking == "accept-new":
        return AcceptNewHostKey(known_hosts)
    return RefuseUnknownHostKey(known_hosts, HostKeyRefused)


def known_keys(spec: ConnectionSpec) -> dict[str, paramiko.PKey]:
    """The keys (by type) the spec's known_hosts file holds for the host."""
    name = known_hosts_name(spec.host, spec.port)
    return dict(_host_keys(_known_hosts_file(spec), name).lookup(name) or {})


class _KnownHostsLines:
    """A known_hosts file's lines by the host names they list, so that a host's keys are decoded from its
    own lines only: paramiko decodes every line into a key object (~0.16 ms a line: 21 ms per connection
    with the lab's 128 lines; a user's file of 600 lines would cost each probe 0.1 s). A plain name is
    matched exactly and a hashed one (|1|salt|hash) by its HMAC, as paramiko's lookup does; the lines
    kept are read by paramiko's own parser, so the keys and the refusals are the same."""

    def __init__(self, text: str):
        self.by_name: dict[str, list[tuple[int, str]]] = {}
        self.hashed: list[tuple[str, int, str]] = []
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            for name in line.split(None, 1)[0].split(","):
                if name.startswith("|1|"):
                    self.hashed.append((name, number, line))
                else:
                    self.by_name.setdefault(name, []).append((number, line))

    def host_keys(self, name: str) -> paramiko.HostKeys:
        """The keys of `name`, the first line's key of each type (as paramiko's lookup has it)."""
        lines = dict(self.by_name.get(name, ()))
        for hashed, number, line in self.hashed:
            if number not in lines and _hashed_name_is(hashed, name):
                lines[number] = line
        keys = paramiko.HostKeys()
        for number in sorted(lines):
            try:
                entry = paramiko.hostkeys.HostKeyEntry.from_line(lines[number], number)
            except paramiko.SSHException:
                continue  # a line paramiko's loader skips too
            if entry is not None and entry.key.get_name() not in (keys.lookup(name) or {}):
                keys.add(name, entry.key.get_name(), entry.key)
        return keys


def _hashed_name_is(hashed: str, name: str) -> bool:
    try:
        return paramiko.HostKeys.hash_host(name, hashed) == hashed
    except Exception:  # noqa: BLE001 - a damaged |1| entry names no host
        return False


_read_known_hosts: dict[str, tuple[tuple[int, ...], _KnownHostsLines]] = {}
_read_lock = threading.Lock()


def _host_keys(path: str, name: str) -> paramiko.HostKeys:
    """The keys the file holds for `name`. The file is read once per version (inode, size, change times)
    for all the hosts of a run; any change to it (a key added, removed or replaced, the file swapped) is
    read again."""
    try:
        stat = os.stat(path)
    except OSError:
        return paramiko.HostKeys()
    version = (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    with _read_lock:
        cached = _read_known_hosts.get(path)
        if cached is None or cached[0] != version:
            try:
                with open(path, encoding="utf-8", errors="replace") as file:
                    text = file.read()
            except OSError:
                return paramiko.HostKeys()
            cached = _read_known_hosts[path] = (version, _KnownHostsLines(text))
    return cached[1].host_keys(name)


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


@dataclass
class SshLink:
    """One open SSH connection: its paramiko client, and the ProxyCommand or TCP socket it rides on (if
    any)."""

    spec: ConnectionSpec
    client: paramiko.SSHClient
    proxy: ProxyProcess | None = None
    direct: socket.socket | None = None

    def close(self) -> None:
        self.client.close()
        if self.proxy is not None:  # the client closes them only when the SSH session had opened
            self.proxy.close()
        if self.direct is not None:
            self.direct.close()


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
    """The finished ProxyCommand line (tritonops.transport.proxy): run as it is, never expanded again."""
    if not spec.proxy_command:
        return None
    values = ProxyValues(host=spec.host, port=spec.port or 22, user=spec.user or getpass.getuser(), name=spec.name)
    return proxy_command_line(spec.proxy_command, values, spec.name)


def _connect_kwargs(spec: ConnectionSpec) -> dict:
    """SSHClient.connect's arguments (those fabric passed). Key files given: those, then the agent, never
    ~/.ssh/id_*; none given: the agent, then ~/.ssh/id_*. GSSAPI stays off (paramiko's default)."""
    kwargs: dict = {"hostname": spec.host, "port": spec.port or 22, "username": spec.user or getpass.getuser(),
                    "timeout": spec.connect_timeout_s, "banner_timeout": spec.connect_timeout_s,
                    "auth_timeout": spec.connect_timeout_s}
    if spec.key_files:
        kwargs["key_filename"] = [os.path.expanduser(path) for path in spec.key_files]
        kwargs["look_for_keys"] = False
    if spec.password:
        kwargs["password"] = spec.password
    return kwargs


def _open(spec: ConnectionSpec, accept_new: bool, via: "str | SshLink | None", role: str = "",
          dialled: "socket.socket | OSError | None" = None) -> SshLink:
    """Open one SSH connection: directly (on `dialled`, the connection dial_direct made, or dialling now),
    through a ProxyCommand (`via` is its finished line) or through an open bastion (`via` is its link);
    every way it can fail becomes one line (HostKeyRefused / Unreachable). `role` ("bastion ") says what
    is being reached when it is not the host itself."""
    link = SshLink(spec, _client(spec, accept_new))
    try:
        if isinstance(via, str):
            link.proxy = sock = ProxyProcess(via)
        elif via is not None:
            sock = _forwarded(via, spec)
        else:
            if isinstance(dialled, OSError):
                raise dialled
            link.direct = sock = dialled or connect_tcp(spec)
        link.client.connect(**_connect_kwargs(spec), sock=sock)
    except (Unreachable, paramiko.SSHException, OSError, EOFError) as exc:
        error = open_error(exc, link, spec, role)
        link.close()
        if error is exc:
            raise
        raise error from exc
    except BaseException:
        link.close()
        raise
    return link


def _forwarded(bastion: SshLink, spec: ConnectionSpec) -> paramiko.Channel:
    """A direct-tcpip channel from the bastion to the host; its refusal becomes Unreachable."""
    try:
        return bastion.client.get_transport().open_channel(
            "direct-tcpip", (spec.host, spec.port or 22), ("", 0), timeout=spec.connect_timeout_s)
    except paramiko.ChannelException as exc:
        raise Unreachable(f"bastion {bastion.spec.label} could not open a connection to {spec.host}:"
                          f"{spec.port or 22}: {exc.text or exc.code}") from exc


def open_error(exc: Exception, link: SshLink, spec: ConnectionSpec, role: str = "") -> Unreachable:
    """What a failure to open a connection means, in one line (HostKeyRefused or Unreachable)."""
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
    ended = link.proxy.ended() if link.proxy is not None else None
    if ended is not None:
        reason = f"its ProxyCommand ended ({ended})"
    return Unreachable(f"cannot connect to {what}: {' '.join(reason.split())}")


class SshTransport:
    """Commands on one host over SSH. Open with `SshTransport.open(spec)`."""

    def __init__(self, spec: ConnectionSpec, link: SshLink, bastions: tuple[SshLink, ...] = ()):
        self.spec = spec
        self.name = spec.name
        self._link = link
        self._bastions = bastions  # open ProxyJump hops, nearest first; closed after the host
        self.traffic = Traffic()

    @classmethod
    def open(cls, spec: ConnectionSpec, *, accept_new_host_keys: bool = False,
             dialled: "socket.socket | OSError | None" = None) -> "SshTransport":
        """Connect (through each ProxyJump bastion, or the ProxyCommand; a direct host on `dialled` when
        given, see transport/dial.py); failures raise Unreachable."""
        hops: list[SshLink] = []
        via: str | SshLink | None = _proxy_command_line(spec)
        try:
            for hop_spec in _hop_specs(spec):  # ProxyJump a,b: reach a, then b through a, then the host
                via = _open(hop_spec, accept_new_host_keys, via, role="bastion ")
                hops.append(via)
            link = _open(spec, accept_new_host_keys, via, dialled=dialled)
        except BaseException:
            for hop in reversed(hops):
                hop.close()
            raise
        return cls(spec, link, tuple(hops))

    @property
    def ssh_client(self) -> paramiko.SSHClient:
        """The open paramiko client, for protocols that ride the same session (docker dial-stdio)."""
        return self._link.client

    def run(self, command: str, *, stdin: bytes | None = None, timeout: float | None = None) -> CommandResult:
        transport = self._link.client.get_transport()
        if transport is None or not transport.is_active():
            raise Unreachable(f"connection to {self.spec.label} was lost")
        channel = transport.open_session()
        try:
            channel.exec_command(command)
            out, err = bytearray(), bytearray()
            threading.Thread(target=_send_stdin, args=(channel, stdin), daemon=True).start()
            deadline = None if timeout is None else time.monotonic() + timeout
            # Woken by the channel (its fileno is a pipe paramiko sets when stdout or stderr data, EOF or
            # the close arrives), not by polling: 64 hosts polling every 5 ms kept a 2-core controller busy.
            while True:
                if channel.recv_ready():
                    out += channel.recv(65536)
                elif channel.recv_stderr_ready():
                    err += channel.recv_stderr(65536)
                elif channel.eof_received or channel.closed:
                    break  # the server sends EOF after the last byte of both streams
                elif not select.select([channel], [], [], _remaining(deadline))[0] and _remaining(deadline) == 0:
                    raise CommandTimeout(f"command timed out after {timeout:g}s on {self.spec.label}")
            if not channel.status_event.wait(_remaining(deadline)):  # the exit status follows EOF (or the close)
                raise CommandTimeout(f"command timed out after {timeout:g}s on {self.spec.label}")
            code = channel.recv_exit_status()
            if code == -1 and not transport.is_active():  # closed with no exit status: the connection died
                raise Unreachable(f"connection to {self.spec.label} was lost while a command ran")
            self.traffic.add(len(command.encode()) + len(stdin or b""), len(out) + len(err))
            return CommandResult(command, code, out.decode(errors="replace"), err.decode(errors="replace"))
        finally:
            channel.close()

    def close(self) -> None:
        self._link.close()
        for bastion in reversed(self._bastions):
            bastion.close()


def _remaining(deadline: float | None) -> float | None:
    """Seconds left until `deadline` (never below 0), or None for no deadline."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _send_stdin(channel: paramiko.Channel, stdin: bytes | None) -> None:
    """Send stdin, then end-of-file, so the remote command can finish."""
    try:
        if stdin:
            channel.sendall(stdin)
        channel.shutdown_write()
    except (OSError, paramiko.SSHException):
        pass
