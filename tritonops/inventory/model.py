"""What a loaded inventory is: hosts, groups, and every variable with where it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tritonops.transport.spec import ConnectionSpec


@dataclass(frozen=True)
class Setting:
    """One variable assignment as written somewhere.

    `source` is the provenance shown to people ("inventory lab.yml:12 (host)"), `where` is the
    file:line errors point at, and `base_dir` is the folder relative paths in the value resolve
    against (the inventory's folder)."""

    value: Any
    source: str
    where: str
    base_dir: str


@dataclass(frozen=True, eq=False)
class Group:
    name: str
    hosts: tuple[str, ...]  # hosts listed directly in this group, inventory order
    children: tuple[str, ...]
    parents: tuple[str, ...]
    vars: dict[str, Any] = field(repr=False)  # the group's own: inventory vars, then group_vars
    depth: int = 0  # 'all' is 0; a group is one deeper than its deepest parent
    priority: int = 1  # ansible_group_priority


@dataclass(frozen=True, eq=False)
class Host:
    name: str
    groups: tuple[str, ...]  # every group it is in, ancestors included, in variable-precedence order
    connection: ConnectionSpec
    vars: dict[str, Any] = field(repr=False)
    history: dict[str, tuple[Setting, ...]] = field(repr=False)  # each var's settings, lowest first

    def setting(self, name: str) -> Setting:
        """The assignment that won for `name`."""
        return self.history[name][-1]

    def var_source(self, name: str) -> str:
        """Where the winning value of `name` was set, e.g. 'group_vars/gpu.yml:3 (group gpu)'."""
        return self.setting(name).source


@dataclass(frozen=True, eq=False)
class Inventory:
    hosts: tuple[Host, ...]
    groups: dict[str, Group]
    sources: tuple[str, ...] = ()  # the inventory files read
    warnings: tuple[str, ...] = ()  # things a person should know but that are not errors

    def host(self, name: str) -> Host:
        from tritonops.inventory.patterns import unknown_name_error

        for host in self.hosts:
            if host.name == name:
                return host
        raise unknown_name_error(name, [host.name for host in self.hosts], what="host")

    def hosts_in(self, group: str) -> tuple[Host, ...]:
        """Hosts of a group and of all its descendants, in inventory order."""
        return tuple(host for host in self.hosts if group in host.groups)

    def select(self, pattern: str | None) -> tuple[Host, ...]:
        """Hosts matching an Ansible host pattern (None, 'all' or '*' = every host)."""
        from tritonops.inventory.patterns import select_hosts

        return select_hosts(self, pattern)
