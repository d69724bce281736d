"""ansible_become with sudo: every command of a host's session runs as the become user.

The pure part builds the wrapper: `sudo_argv` / `wrapped` (tested by equality) and `refusal` (sudo's
complaint as one line). `BecomeTransport` applies it to a session's transport, and to the channels that
ride beside the commands: the docker SDK's `docker system dial-stdio` (image/docker_ssh.py) and SFTP
(weights/transfer.py) through `exec_channel` / `open_sftp`.

Whether sudo needs a password is decided once per session, on its first use: `sudo -n -u USER -- true`
succeeding means it does not (NOPASSWD, or the login user is already USER's equal), and every command
then runs under `sudo -n -u USER --`. Otherwise the password is checked once with `sudo -k -S -p ''
-u USER -- true`, and every command runs under `sudo -k -S -p '' -u USER --` with the password as the
first line of its stdin:
- -S: sudo reads the password from stdin, never from a terminal (there is none: no pty is asked for);
- -k: sudo ignores a cached timestamp, so it always reads that line, and the line is never left over
  for the command;
- -p '': no prompt on stderr;
- sudo reads its password one byte at a time up to the newline, so the command's own stdin that
  follows reaches the command intact (sudo 1.9.13: tests/lab/test_become_lab.py sends 300 kB of random
  bytes behind the password line, pushes weights over SFTP and talks to a docker engine through sudo).
The password is never on a command line (not in `ps` on the host), never in a result or an error:
only ever written to sudo's stdin. A host where sudo refuses (a wrong password, a user not in sudoers,
no sudo) fails every phase with the same one line, and sudo is asked only once (each refused attempt
is logged on the host and may count towards a lockout).
"""

from __future__ import annotations

import shlex
import threading

from tritonops.errors import HostError
from tritonops.transport.base import CommandResult, Transport, Unreachable
from tritonops.transport.spec import ConnectionSpec

SFTP_SERVERS = ("/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server", "/usr/lib/ssh/sftp-server",
                "/usr/libexec/sftp-server", "/usr/lib/sftp-server")


class BecomeFailed(HostError):
    """sudo refused to run commands as the become user on a host; the message says why, never the password."""


def sudo_argv(user: str, *, password: bool) -> tuple[str, ...]:
    """The argv prefix that runs a command as `user`: reading the password from stdin, or never asking."""
    if password:
        return ("sudo", "-k", "-S", "-p", "", "-u", user, "--")
    return ("sudo", "-n", "-u", user, "--")


def wrapped(command: str, user: str, *, password: bool) -> str:
    """`command` (a shell command line) run by /bin/sh as `user` under sudo: a command line for the host."""
    return shlex.join((*sudo_argv(user, password=password), "/bin/sh", "-c", command))


def password_line(password: str) -> bytes:
    return password.encode() + b"\n"


def sftp_server_command(candidates: tuple[str, ...] = SFTP_SERVERS) -> str:
    """A shell command printing the first of `candidates` that is executable (exit 1 when none is)."""
    tests = " || ".join(f"{{ [ -x {shlex.quote(path)} ] && echo {shlex.quote(path)}; }}" for path in candidates)
    return f"{tests} || exit 1"


def refusal(exit_code: int, stderr: str, user: str) -> str:
    """Why sudo would not run commands as `user`, in one line, from what it said. Pure."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and line.strip() != "Sorry, try again."]
    said = " ".join(lines)
    if exit_code == 127 or "sudo: not found" in said or "sudo: command not found" in said:
        return "sudo is not installed on the host (or not on the login user's PATH)"
    if "incorrect password attempt" in said or "no password was provided" in said:
        return "sudo refused the become password (ansible_become_password / --ask-become-pass)"
    if "a password is required" in said:
        return "sudo needs a password here: set ansible_become_password or pass --ask-become-pass"
    if "is not in the sudoers file" in said or "is not allowed to" in said or "may not run sudo" in said:
        return f"the login user may not run commands as {user} with sudo ({lines[-1]})"
    return f"sudo exited {exit_code}" + (f": {lines[-1]}" if lines else "")


class BecomeTransport:
    """`inner`'s commands (and its docker and SFTP channels) run as `spec.become_user` through sudo."""

    def __init__(self, inner: Transport, spec: ConnectionSpec):
        self.inner = inner
        self.name = inner.name
        self.spec = spec
        self.user = spec.become_user or "root"
        self._password = spec.become_password
        self._lock = threading.Lock()
        self._with_password: bool | None = None  # decided on first use
        self._refused: str | None = None
        self._sftp_server: str | None = None

    @property
    def traffic(self):
        return self.inner.traffic

    @property
    def ssh_client(self):
        """The session's paramiko client (None on a local host): what image/docker_ssh.py looks for."""
        return getattr(self.inner, "ssh_client", None)

    def _decide(self) -> bool:
        """Whether commands send the password; BecomeFailed (the same each time) when sudo refuses."""
        with self._lock:
            if self._refused is None and self._with_password is None:
                self._with_password, self._refused = self._ask_sudo()
            if self._refused is not None:
                raise BecomeFailed(self.name, f"become {self.user} with sudo failed: {self._refused}")
            return bool(self._with_password)

    def _ask_sudo(self) -> tuple[bool | None, str | None]:
        check = self.inner.run(shlex.join((*sudo_argv(self.user, password=False), "true")), timeout=60)
        if check.ok:
            return False, None
        if self._password is None or check.exit_code == 127:
            return None, refusal(check.exit_code, check.stderr + check.stdout, self.user)
        check = self.inner.run(shlex.join((*sudo_argv(self.user, password=True), "true")),
                               stdin=password_line(self._password), timeout=60)
        if check.ok:
            return True, None
        return None, refusal(check.exit_code, check.stderr + check.stdout, self.user)

    def run(self, command: str, *, stdin: bytes | None = None, timeout: float | None = None) -> CommandResult:
        with_password = self._decide()
        if with_password:
            stdin = password_line(self._password or "") + (stdin or b"")
        done = self.inner.run(wrapped(command, self.user, password=with_password), stdin=stdin, timeout=timeout)
        return CommandResult(command, done.exit_code, done.stdout, done.stderr)

    def exec_channel(self, command: str):
        """An SSH exec channel running `command` as the become user, the password (if any) already sent:
        what it reads next is the caller's. For the docker SDK's dial-stdio and for SFTP."""
        with_password = self._decide()
        client = self.ssh_client
        transport = client.get_transport() if client is not None else None
        if transport is None or not transport.is_active():
            raise Unreachable(f"connection to {self.spec.label} was lost")
        channel = transport.open_session()
        try:
            channel.exec_command(wrapped(command, self.user, password=with_password))
            if with_password:
                channel.sendall(password_line(self._password or ""))
        except BaseException:
            channel.close()
            raise
        return channel

    def open_sftp(self):
        """An SFTP client whose server (the host's sftp-server) runs as the become user."""
        from tritonops.transport.paramiko_lib import paramiko

        if self._sftp_server is None:
            found = self.run(sftp_server_command(), timeout=60)
            if not found.ok or not found.stdout.strip():
                raise HostError(self.name, "no sftp-server to push files as the become user (looked for "
                                           + ", ".join(SFTP_SERVERS) + ")")
            self._sftp_server = found.stdout.strip().splitlines()[0]
        return paramiko.SFTPClient(self.exec_channel("exec " + shlex.quote(self._sftp_server)))

    def close(self) -> None:
        self.inner.close()
