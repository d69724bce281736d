"""The structure every inventory source (YAML, INI) parses into, before variables are resolved."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tritonops.errors import InputError
from tritonops.inventory.model import Setting


@dataclass
class DraftGroup:
    name: str
    where: str
    hosts: list[str] = field(default_factory=list)
    children: dict[str, str] = field(default_factory=dict)  # child name -> where the edge was written
    vars: dict[str, Setting] = field(default_factory=dict)


@dataclass
class DraftHost:
    name: str
    where: str
    vars: dict[str, Setting] = field(default_factory=dict)


class InventoryDraft:
    """Groups and hosts in the order they were first written; later assignments win."""

    def __init__(self) -> None:
        self.groups: dict[str, DraftGroup] = {}
        self.hosts: dict[str, DraftHost] = {}

    def group(self, name: str, where: str) -> DraftGroup:
        if not isinstance(name, str) or not name:
            raise InputError(f"a group name must be a non-empty string, not {name!r}", where)
        if name not in self.groups:
            self.groups[name] = DraftGroup(name, where)
        return self.groups[name]

    def add_host(self, group: str | None, name: str, where: str) -> DraftHost:
        """Declare a host; `group` None means listed directly under 'all'."""
        if name not in self.hosts:
            self.hosts[name] = DraftHost(name, where)
        if group is not None:
            members = self.group(group, where).hosts
            if name not in members:
                members.append(name)
        return self.hosts[name]

    def add_child(self, parent: str, child: str, where: str) -> None:
        if parent == child:
            raise InputError(f"group '{child}' is its own ancestor ({child} -> {child})", where)
        self.group(parent, where).children.setdefault(child, where)
        self.group(child, where)


def inventory_setting(name: Any, value: Any, file_shown: str, line: int, scope: str, base_dir: str) -> Setting:
    """A variable written in an inventory file; scope is 'host' or 'group NAME'."""
    where = f"{file_shown}:{line}"
    check_var_name(name, where)
    return Setting(value, f"inventory {where} ({scope})", where, base_dir)


def check_var_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise InputError(f"invalid variable name {name!r}: use letters, digits and underscores", where)
