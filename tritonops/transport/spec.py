"""How to reach one host: the connection settings an inventory resolves to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class ConnectionSpec:
    """Everything the transport needs to open an SSH session to one host.

    `name` is the inventory name (what results are keyed by); `host` is the
    address to dial (ansible_host, else the name). Values left None fall back
    to ~/.ssh/config (or `ssh_config_file`) and then to SSH defaults.
    """

    name: str
    host: str
    port: int | None = None
    user: str | None = None
    key_files: tuple[str, ...] = ()
    password: str | None = field(default=None, repr=False)
    proxy_command: str | None = None
    proxy_jump: str | None = None
    known_hosts_file: str | None = None
    strict_host_key_checking: str = "yes"  # yes | accept-new (never 'no')
    connect_timeout_s: float = 10.0
    local: bool = False  # ansible_connection=local: run on this machine, no SSH
    # how to open this host instead of dialling it: (spec, accept_new_host_keys=) -> Transport; set by an adapter
    # over a connection the caller already holds (transport/fabric_adapter.py), None for everything else
    opener: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    # ansible_become: every command runs as this user through sudo (transport/become.py); None: as `user`
    become_user: str | None = None
    become_password: str | None = field(default=None, repr=False)  # only ever written to sudo's stdin

    @property
    def label(self) -> str:
        target = f"{self.user}@{self.host}" if self.user else self.host
        return f"{target}:{self.port}" if self.port else target
