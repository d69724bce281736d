"""How to reach a host: inventory variables, then SSH arguments, then ~/.ssh/config -> ConnectionSpec.

The inventory wins over the SSH client config, like Ansible: the config only fills what the
inventory left unset (HostName, Port, User, IdentityFile, ProxyCommand/ProxyJump, UserKnownHostsFile).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tritonops.errors import InputError
from tritonops.inventory.model import Setting
from tritonops.inventory.ssh_config import load_ssh_config, lookup
from tritonops.inventory.ssh_options import SshOptions, parse_ssh_args, parse_timeout
from tritonops.transport.proxy import check_proxy_command
from tritonops.transport.spec import ConnectionSpec
from tritonops.values.flags import flag
from tritonops.values.ssh_target import host_address, parse_target, ssh_port, ssh_user

if TYPE_CHECKING:
    import paramiko

_ALIASES = {  # the name tritonops reads -> older Ansible spellings also accepted
    "ansible_host": ("ansible_host", "ansible_ssh_host"),
    "ansible_port": ("ansible_port", "ansible_ssh_port"),
    "ansible_user": ("ansible_user", "ansible_ssh_user"),
    "ansible_password": ("ansible_password", "ansible_ssh_pass"),
    "ansible_ssh_private_key_file": ("ansible_ssh_private_key_file", "ansible_private_key_file"),
    "ansible_become_password": ("ansible_become_password", "ansible_become_pass", "ansible_sudo_pass"),
}
SECRET_VARS = frozenset({"ansible_password", "ansible_ssh_pass", "ansible_become_password",
                         "ansible_become_pass", "ansible_sudo_pass"})
_SSH_CONNECTIONS = ("ssh", "paramiko", "smart")


@dataclass
class _Reach:
    """The connection being worked out; None means 'not said yet'."""

    name: str
    host: str
    host_given: bool = False
    port: int | None = None
    user: str | None = None
    key_files: list[str] = field(default_factory=list)
    password: str | None = None
    proxy_command: str | None = None
    proxy_jump: str | None = None
    known_hosts_file: str | None = None
    strict_host_key_checking: str | None = None
    connect_timeout_s: float | None = None
    local: bool = False
    become_user: str | None = None
    become_password: str | None = None

    def spec(self) -> ConnectionSpec:
        return ConnectionSpec(
            name=self.name, host=self.host, port=self.port, user=self.user,
            key_files=tuple(dict.fromkeys(self.key_files)), password=self.password,
            proxy_command=self.proxy_command, proxy_jump=self.proxy_jump,
            known_hosts_file=self.known_hosts_file, strict_host_key_checking=self.strict_host_key_checking or "yes",
            connect_timeout_s=self.connect_timeout_s or 10.0, local=self.local, become_user=self.become_user,
            become_password=self.become_password)


def connection_from_vars(name: str, history: dict[str, tuple[Setting, ...]],
                         ssh_config: paramiko.SSHConfig | None, ssh_config_path: str | None,
                         declared_at: str | None = None) -> ConnectionSpec:
    """Every address, user, port and ProxyJump hop is checked (tritonops.values.ssh_target) before it
    is looked up in the SSH config or handed to the transport; `declared_at` is where the host was named."""
    def winner(var: str) -> Setting | None:
        for alias in _ALIASES.get(var, (var,)):
            if alias in history:
                return history[alias][-1]
        return None

    kind = winner("ansible_connection")
    if kind is not None and kind.value not in _SSH_CONNECTIONS + ("local",):
        raise InputError(f"ansible_connection {kind.value!r} is not supported (use ssh or local)", kind.where)
    address = winner("ansible_host")
    local = kind is not None and kind.value == "local"
    reach = _Reach(name, name, host_given=address is not None, local=local)
    if address is not None:
        reach.host = host_address(address.value, address.where)
    elif not local:
        reach.host = host_address(name, declared_at)
    if (port := winner("ansible_port")) is not None:
        reach.port = ssh_port(port.value, port.where)
    if (user := winner("ansible_user")) is not None:
        reach.user = ssh_user(user.value, user.where)
    if (password := winner("ansible_password")) is not None:
        reach.password = str(password.value)
    if (key := winner("ansible_ssh_private_key_file")) is not None:
        reach.key_files.append(local_path(key.value, key.base_dir))
    options = [_ssh_options(setting) for setting in
               (winner("ansible_ssh_common_args"), winner("ansible_ssh_extra_args")) if setting is not None]
    for option in options:  # common args before extra args: the first value wins, as in OpenSSH
        _apply_ssh_options(reach, option)
    if (known_hosts := winner("tritonops_known_hosts_file")) is not None:
        reach.known_hosts_file = local_path(known_hosts.value, known_hosts.base_dir)
    if (timeout := winner("tritonops_connect_timeout")) is not None:
        reach.connect_timeout_s = parse_timeout(timeout.value, timeout.where)
    _apply_become(reach, winner)
    if not reach.local:
        _fill_from_ssh_config(reach, lookup(ssh_config, reach.host, ssh_config_path), ssh_config_path)
    return reach.spec()


_BECOME_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")


def _apply_become(reach: _Reach, winner) -> None:
    """ansible_become / _user / _method / _password (transport/become.py). The method and the user are
    checked even where become is off, so a typo fails at its line before it is ever switched on."""
    method = winner("ansible_become_method")
    if method is not None and method.value != "sudo":
        raise InputError(f"ansible_become_method {str(method.value)!r} is not supported (tritonops becomes "
                         "with sudo only)", method.where)
    user = winner("ansible_become_user")
    if user is not None and not (isinstance(user.value, str) and _BECOME_USER.fullmatch(user.value)):
        raise InputError(f"ansible_become_user must be a user name (letters, digits, '.', '_', '-'), not "
                         f"{str(user.value)[:40]!r}", user.where)
    become = winner("ansible_become")
    if become is None or not _flag(become):
        return
    reach.become_user = user.value if user is not None else "root"
    password = winner("ansible_become_password")
    if password is not None and password.value is not None:
        if not isinstance(password.value, (str, int)) or isinstance(password.value, bool) or \
                "\n" in str(password.value) or "\r" in str(password.value):
            raise InputError("ansible_become_password must be one line of text", password.where)
        reach.become_password = str(password.value)


def _flag(setting: Setting) -> bool:
    return flag(setting.value, "ansible_become", setting.where)


def proxy_jump_hops(value: str, where: str | None) -> str:
    """`a,b` as written, once every hop reads as [user@]host[:port]."""
    hops = [hop.strip() for hop in str(value).split(",")]
    if not all(hops):
        raise InputError(f"ProxyJump {value!r} has an empty hop", where)
    for hop in hops:
        parse_target(hop, where)
    return ",".join(hops)


def spec_from_target(target: str, *, ssh_config_file: str | None = None) -> ConnectionSpec:
    """A host named on the command line: host, user@host, host:port, user@[2001:db8::1]:2222."""
    parsed = parse_target(target, "command line")
    reach = _Reach(target, parsed.host, host_given=False, user=parsed.user, port=parsed.port)
    config, path = load_ssh_config(ssh_config_file)
    _fill_from_ssh_config(reach, lookup(config, parsed.host, path), path)
    return reach.spec()


def local_path(value: Any, base_dir: str) -> str:
    """~ expanded; a relative path is relative to the inventory that set it."""
    path = os.path.expanduser(str(value))
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(base_dir, path))


def _ssh_options(setting: Setting) -> SshOptions:
    options = parse_ssh_args(setting.value, setting.where)
    options.key_files = [local_path(path, setting.base_dir) for path in options.key_files]
    if options.known_hosts_file is not None:
        options.known_hosts_file = local_path(options.known_hosts_file, setting.base_dir)
    return options


def _apply_ssh_options(reach: _Reach, options: SshOptions) -> None:
    reach.port = reach.port if reach.port is not None else options.port
    reach.user = reach.user if reach.user is not None else options.user
    reach.key_files.extend(options.key_files)
    if reach.proxy_command is None and reach.proxy_jump is None:
        reach.proxy_command = _checked_proxy_command(options.proxy_command, options.where)
        jump = _unless_none(options.proxy_jump)
        reach.proxy_jump = proxy_jump_hops(jump, options.where) if jump else None
    reach.known_hosts_file = reach.known_hosts_file or options.known_hosts_file
    reach.connect_timeout_s = reach.connect_timeout_s or options.connect_timeout_s
    reach.strict_host_key_checking = reach.strict_host_key_checking or options.strict_host_key_checking


def _fill_from_ssh_config(reach: _Reach, found: dict[str, Any], path: str | None) -> None:
    if not found:
        return
    where = path or "ssh config"
    if not reach.host_given and found.get("hostname"):
        reach.host = host_address(found["hostname"], f"{where} (HostName for {reach.name})")
    if reach.port is None and found.get("port"):
        reach.port = ssh_port(found["port"], where)
    if reach.user is None and found.get("user"):
        reach.user = ssh_user(found["user"], where)
    if not reach.key_files and found.get("identityfile"):
        reach.key_files = [os.path.expanduser(path) for path in found["identityfile"]]
    if reach.proxy_command is None and reach.proxy_jump is None:
        reach.proxy_command = _checked_proxy_command(found.get("proxycommand"), where)
        jump = None if reach.proxy_command else _unless_none(found.get("proxyjump"))
        reach.proxy_jump = proxy_jump_hops(jump, where) if jump else None
    if reach.known_hosts_file is None and found.get("userknownhostsfile"):
        reach.known_hosts_file = os.path.expanduser(found["userknownhostsfile"].split()[0])


def _unless_none(value: str | None) -> str | None:
    """OpenSSH's 'none' turns ProxyCommand / ProxyJump off."""
    return None if value is None or value.strip().lower() == "none" else value


def _checked_proxy_command(value: str | None, where: str | None) -> str | None:
    """A ProxyCommand whose %-tokens the transport can expand (an unknown token is an error here, at its line)."""
    command = _unless_none(value)
    if command is not None:
        check_proxy_command(command, where)
    return command
