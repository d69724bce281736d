"""Host-key checking: unknown keys refused unless the user opts in, changed keys always refused.

paramiko clients are often given AutoAddPolicy (fabric's are), which quietly accepts unknown
keys; tritonops gives each client one of these policies instead, like OpenSSH's
StrictHostKeyChecking=yes and =accept-new.
"""

from __future__ import annotations

import os
import shlex

from tritonops.transport.paramiko_lib import paramiko


def known_hosts_name(host: str, port: int | None) -> str:
    """How known_hosts names a host: 'host' on port 22, else '[host]:port'."""
    return host if not port or port == 22 else f"[{host}]:{port}"


def fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} SHA256:{key.fingerprint.split(':', 1)[-1]}" if hasattr(key, "fingerprint") \
        else key.get_name()


def trust_command(host: str, port: int | None, known_hosts_file: str) -> str:
    port_opt = f"-p {port} " if port and port != 22 else ""
    return f"ssh-keyscan {port_opt}{shlex.quote(host)} >> {shlex.quote(known_hosts_file)}"


class RefuseUnknownHostKey(paramiko.MissingHostKeyPolicy):
    def __init__(self, known_hosts_file: str, refused):
        self.known_hosts_file = known_hosts_file
        self.refused = refused  # exception class to raise

    def missing_host_key(self, client, hostname, key):
        host, port = _split(hostname)
        raise self.refused(
            f"unknown host key {fingerprint(key)} for {hostname} (not in {self.known_hosts_file}); "
            f"check it and trust it with: {trust_command(host, port, self.known_hosts_file)} "
            f"— or pass --accept-new-host-keys")


class AcceptNewHostKey(paramiko.MissingHostKeyPolicy):
    """Trust a key seen for the first time and record it; a changed key still fails
    (paramiko raises BadHostKeyException before asking this policy)."""

    def __init__(self, known_hosts_file: str):
        self.known_hosts_file = known_hosts_file

    def missing_host_key(self, client, hostname, key):
        client.get_host_keys().add(hostname, key.get_name(), key)
        directory = os.path.dirname(self.known_hosts_file)
        if directory:
            os.makedirs(directory, exist_ok=True)
        # One short append per key: O_APPEND keeps parallel hosts from interleaving.
        line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
        fd = os.open(self.known_hosts_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def changed_key_message(hostname: str, port: int | None, known_hosts_file: str,
                        exc: paramiko.BadHostKeyException) -> str:
    name = known_hosts_name(hostname, port)
    return (f"host key for {name} has CHANGED (got {fingerprint(exc.key)}, known_hosts has "
            f"{fingerprint(exc.expected_key)}): refusing to connect. If the host was reinstalled, remove the old "
            f"key with: ssh-keygen -R {shlex.quote(name)} -f {shlex.quote(known_hosts_file)}")


def _split(hostname: str) -> tuple[str, int | None]:
    if hostname.startswith("[") and "]:" in hostname:
        host, _, port = hostname[1:].partition("]:")
        return host, int(port)
    return hostname, None
