"""Ansible's YAML inventory format: groups at the top, each with hosts:, children: and vars:."""

from __future__ import annotations

import os
from typing import Any

from tritonops.errors import InputError
from tritonops.inventory.draft import InventoryDraft, inventory_setting
from tritonops.inventory.host_ranges import expand_host_range, split_host_port
from tritonops.inventory.yaml_lines import LinedMap, load_yaml_file, plain
from tritonops.values.files import FileReads

GROUP_SECTIONS = ("hosts", "children", "vars")


def read_yaml_inventory(path: str, shown: str, draft: InventoryDraft, reads: FileReads | None = None) -> None:
    data = load_yaml_file(path, shown, reads)
    if data is None:
        return
    parser = _YamlInventory(shown, os.path.dirname(os.path.abspath(path)), draft)
    if not isinstance(data, LinedMap):
        raise InputError("an inventory must be a mapping of group names (start with 'all:')", f"{shown}:1")
    for key, value in data.items():
        line = data.line_of(key)
        if key in GROUP_SECTIONS or key == "plugin":
            hint = ("an inventory plugin's configuration is read by ansible-inventory: name the file .yml or .yaml"
                    if key == "plugin"
                    else f"'{key}:' must sit inside a group; put it under 'all:'")
            raise InputError(f"unknown top-level key '{key}': {hint}", f"{shown}:{line}")
        parser.group(key, value, line)


class _YamlInventory:
    def __init__(self, shown: str, base_dir: str, draft: InventoryDraft):
        self.shown, self.base_dir, self.draft = shown, base_dir, draft

    def where(self, line: int) -> str:
        return f"{self.shown}:{line}"

    def group(self, name: Any, body: Any, line: int) -> None:
        if not isinstance(name, str):
            raise InputError(f"a group name must be a string, not {name!r}", self.where(line))
        self.draft.group(name, self.where(line))
        if body is None:
            return
        if not isinstance(body, LinedMap):
            raise InputError(f"group '{name}' must be a mapping with hosts:, children: or vars:, "
                             f"not {_kind(body)}", self.where(line))
        for key in body:
            if key not in GROUP_SECTIONS:
                raise InputError(f"unknown key '{key}' in group '{name}' (expected hosts:, children: or vars:)",
                                 self.where(body.line_of(key)))
        for key in GROUP_SECTIONS:
            section = body.get(key)
            if section is not None and not isinstance(section, LinedMap):
                raise InputError(f"'{key}:' of group '{name}' must be a mapping, not {_kind(section)}",
                                 self.where(body.line_of(key)))
        for var, value in (body.get("vars") or {}).items():
            setting = inventory_setting(var, plain(value), self.shown, body["vars"].line_of(var),
                                        f"group {name}", self.base_dir)
            self.draft.group(name, self.where(line)).vars[var] = setting
        for host, host_vars in (body.get("hosts") or {}).items():
            self.hosts(name, host, host_vars, body["hosts"].line_of(host))
        for child, child_body in (body.get("children") or {}).items():
            child_line = body["children"].line_of(child)
            self.group(child, child_body, child_line)
            self.draft.add_child(name, child, self.where(child_line))

    def hosts(self, group: str, pattern: Any, host_vars: Any, line: int) -> None:
        where = self.where(line)
        if not isinstance(pattern, (str, int)) or isinstance(pattern, bool):
            raise InputError(f"a host name must be a string, not {pattern!r}", where)
        if host_vars is not None and not isinstance(host_vars, LinedMap):
            raise InputError(f"host '{pattern}' must map to its variables (or nothing), not {_kind(host_vars)}",
                             where)
        pattern, port = split_host_port(str(pattern))
        for name in expand_host_range(pattern, where):
            host = self.draft.add_host(None if group == "all" else group, name, where)
            if port is not None:
                host.vars["ansible_port"] = inventory_setting("ansible_port", port, self.shown, line, "host",
                                                              self.base_dir)
            for var, value in (host_vars or {}).items():
                host.vars[var] = inventory_setting(var, plain(value), self.shown, host_vars.line_of(var),
                                                   "host", self.base_dir)


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", bool: "a boolean"}.get(type(value),
                                                                                    type(value).__name__)
