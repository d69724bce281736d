"""tritonops over the fabric Connections of a fabfile (the optional extra `tritonops[fabric]`).

A fabfile keeps its hosts' connection settings in fabric `Connection` / `Group` objects: user, port,
connect_kwargs (key files, a password), a gateway, what fabric read from ~/.ssh/config or `fab -S`.
`fabric_spec(name, connection)` is the ConnectionSpec the rest of tritonops works with for such a host; its
opener opens that very Connection through fabric, with two things changed from fabric's defaults:
- host keys: fabric gives every client paramiko's AutoAddPolicy, which trusts any key silently. The client (and a
  gateway Connection's) gets tritonops' policy instead: the keys of the known_hosts file (the host's
  UserKnownHostsFile in fabric's SSH config, else ~/.ssh/known_hosts, or the one given), an unknown key refused
  with the command that trusts it (recorded with accept-new), a changed key always refused. A Connection the
  caller opened before is used only if the key it was opened with is one that file holds.
- Nagle's algorithm off: a host reached directly is dialled here with TCP_NODELAY (transport/dial.py says what it
  saves) and the socket handed to fabric's open(); through a gateway, the sockets fabric made get it after.
The transport is the SSH transport's (commands; SFTP and docker over the same session, `ssh_client`). A
Connection tritonops opened is closed at the end of the run; one the caller opened stays open.

Only tritonops.api imports this module, and only when it is handed fabric's objects: the CLI never loads fabric.
"""

from __future__ import annotations

import os
import socket
from typing import Any, Iterable, Mapping

import fabric  # the extra: pip install 'tritonops[fabric]'

from tritonops.errors import InputError
from tritonops.transport.base import HostKeyRefused, Unreachable
from tritonops.transport.dial import connect_tcp
from tritonops.transport.host_keys import changed_key_message, known_hosts_name
from tritonops.transport.paramiko_lib import paramiko
from tritonops.transport.spec import ConnectionSpec
from tritonops.transport.ssh import (DEFAULT_KNOWN_HOSTS, SshLink, SshTransport, host_key_policy, known_keys,
                                     open_error, trust_known_hosts)


def named_connections(hosts: Any) -> dict[str, fabric.Connection]:
    """A Connection, a Group, an iterable of Connections or a mapping name -> Connection, by inventory name: the
    name a Connection was given (its ~/.ssh/config alias or address, `original_host`), with ':port' added where
    two of them share one (two hosts behind one address)."""
    if isinstance(hosts, Mapping):
        named = dict(hosts)
        for name, connection in named.items():
            if not isinstance(connection, fabric.Connection):
                raise InputError(f"not a fabric Connection: {type(connection).__name__}", f"hosts[{name!r}]")
        return named
    connections = [hosts] if isinstance(hosts, fabric.Connection) else list(_connections(hosts))
    given = [connection.original_host for connection in connections]
    named = {}
    for connection in connections:
        name = connection.original_host
        if given.count(name) > 1:
            name = f"{name}:{connection.port}"
        if name in named:
            raise InputError(f"two fabric connections to {name}", "hosts")
        named[name] = connection
    return named


def _connections(hosts: Iterable[Any]) -> Iterable[fabric.Connection]:
    for connection in hosts:
        if not isinstance(connection, fabric.Connection):
            raise InputError(f"not a fabric Connection: {type(connection).__name__}", "hosts")
        yield connection


def fabric_spec(name: str, connection: fabric.Connection, *, known_hosts_file: str | None = None,
                strict_host_key_checking: str | None = None) -> ConnectionSpec:
    """How tritonops sees the host `connection` reaches: its address, port and user as fabric resolved them, the
    known_hosts file to check its key against (given, else the UserKnownHostsFile of fabric's SSH config, else
    ~/.ssh/known_hosts), and an opener that opens `connection` itself."""
    ssh_config = connection.ssh_config or {}
    key_files = (connection.connect_kwargs or {}).get("key_filename") or ()
    known = known_hosts_file or _first_word(ssh_config.get("userknownhostsfile"))
    strict = strict_host_key_checking or str(ssh_config.get("stricthostkeychecking", "yes")).lower()
    return ConnectionSpec(
        name=name, host=connection.host, port=int(connection.port), user=connection.user,
        key_files=(key_files,) if isinstance(key_files, str) else tuple(key_files), known_hosts_file=known,
        strict_host_key_checking="accept-new" if strict == "accept-new" else "yes",  # never 'no'
        connect_timeout_s=float(connection.connect_timeout or 10), opener=FabricOpener(connection))


def _first_word(value: Any) -> str | None:
    """The first file of a UserKnownHostsFile line (paramiko gives it as one string)."""
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    words = str(value).split() if value else []
    return words[0] if words else None


class FabricOpener:
    """A spec's opener (ConnectionSpec.opener): the host's session over its fabric Connection."""

    def __init__(self, connection: fabric.Connection):
        self.connection = connection

    def __call__(self, spec: ConnectionSpec, *, accept_new_host_keys: bool = False) -> "FabricTransport":
        return FabricTransport.open(spec, self.connection, accept_new_host_keys=accept_new_host_keys)


class FabricTransport(SshTransport):
    """The SSH transport on a fabric Connection's paramiko client."""

    def __init__(self, spec: ConnectionSpec, connection: fabric.Connection, opened: tuple[fabric.Connection, ...]):
        super().__init__(spec, SshLink(spec, connection.client))
        self.connection = connection
        self._opened = opened  # what tritonops opened (the host, its gateway): closed by close()

    @classmethod
    def open(cls, spec: ConnectionSpec, connection: fabric.Connection, *,
             accept_new_host_keys: bool = False) -> "FabricTransport":
        """Open `connection` (and its gateway Connection) with tritonops' host-key policy; failures raise
        Unreachable (HostKeyRefused for a key), in the words the SSH transport uses."""
        opened: list[fabric.Connection] = []
        try:
            _open_chain(spec, connection, accept_new_host_keys, opened)
        except BaseException:
            for each in reversed(opened):
                each.close()
            raise
        return cls(spec, connection, tuple(opened))

    def close(self) -> None:
        for connection in reversed(self._opened):  # the host before its gateway
            connection.close()


def _open_chain(spec: ConnectionSpec, connection: fabric.Connection, accept_new: bool, opened: list) -> None:
    """The gateway Connection first (its key checked against the host's known_hosts file, as a ProxyJump bastion's
    is), then the host through it; a ProxyCommand gateway is fabric's to run."""
    gateway = connection.gateway
    if isinstance(gateway, fabric.Connection):
        _open_chain(fabric_spec(f"gateway for {spec.name}", gateway, known_hosts_file=spec.known_hosts_file,
                                strict_host_key_checking=spec.strict_host_key_checking), gateway, accept_new, opened)
    _open(spec, connection, accept_new, opened, direct=not gateway)


def _open(spec: ConnectionSpec, connection: fabric.Connection, accept_new: bool, opened: list,
          direct: bool) -> None:
    if connection.is_connected:  # the caller's: its key must be one the known_hosts file holds
        _check_key_of_open(spec, connection, accept_new)
        return
    trust_known_hosts(connection.client, spec, accept_new)
    sock = None
    try:
        if direct:
            sock = connect_tcp(spec)  # Nagle off from the handshake's first message
        given = connection.connect_kwargs
        connection.connect_kwargs = dict(given, sock=sock) if sock is not None else given
        try:
            connection.open()
        finally:
            connection.connect_kwargs = given
    except (Unreachable, paramiko.SSHException, OSError, EOFError) as exc:
        if sock is not None:
            sock.close()
        error = open_error(exc, SshLink(spec, connection.client), spec)
        if error is exc:
            raise
        raise error from exc
    opened.append(connection)
    _nodelay(connection.transport.sock if connection.transport is not None else None)


def _check_key_of_open(spec: ConnectionSpec, connection: fabric.Connection, accept_new: bool) -> None:
    """A Connection opened before tritonops saw it (with fabric's AutoAddPolicy): its host key checked now, as it
    would have been at the handshake."""
    key = connection.transport.get_remote_server_key()
    name = known_hosts_name(spec.host, spec.port)
    known = known_keys(spec).get(key.get_name())
    if known is None:
        host_key_policy(spec, accept_new).missing_host_key(connection.client, name, key)  # refuses, or records
    elif known.asbytes() != key.asbytes():
        known_hosts = os.path.expanduser(spec.known_hosts_file or DEFAULT_KNOWN_HOSTS)
        raise HostKeyRefused(changed_key_message(spec.host, spec.port, known_hosts,
                                                 paramiko.BadHostKeyException(name, key, known)))


def _nodelay(sock: Any) -> None:
    if isinstance(sock, socket.socket):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass  # not TCP (a Unix socket): nothing to turn off
