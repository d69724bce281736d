"""Ansible's INI inventory format: [group], [group:children], [group:vars], `host key=value ...`."""

from __future__ import annotations

import ast
import os
import re
import warnings
from typing import Any

from tritonops.errors import InputError
from tritonops.values.files import FileReads, read_regular_text
from tritonops.inventory.draft import InventoryDraft, inventory_setting
from tritonops.inventory.host_ranges import expand_host_range, split_host_port

_SECTION = re.compile(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*([#;].*)?$")


def read_ini_inventory(path: str, shown: str, draft: InventoryDraft, reads: FileReads | None = None) -> None:
    base_dir = os.path.dirname(os.path.abspath(path))
    declared = {"all", "ungrouped"}
    pending: dict[str, tuple[str, str]] = {}  # group -> (where first referenced, how)
    group, kind = "ungrouped", "hosts"
    lines = (reads.text(path, shown, what="inventory file") if reads
             else read_regular_text(path, shown, what="inventory file")).splitlines()
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        where = f"{shown}:{number}"
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            match = _SECTION.match(line)
            if not match:
                raise InputError(f"invalid section header {line!r} (expected [group], [group:vars] "
                                 "or [group:children])", where)
            group, kind = match.group(1), match.group(2) or "hosts"
            if kind not in ("hosts", "vars", "children"):
                raise InputError(f"unknown section type ':{kind}' (expected :vars or :children)", where)
            draft.group(group, where)
            if kind == "vars":
                pending.setdefault(group, (where, f"section [{group}:vars] is for a group that is never declared"))
            else:
                declared.add(group)
            continue
        if kind == "hosts":
            _host_line(line, group, where, shown, number, base_dir, draft)
        elif kind == "children":
            child = _tokens(line, where)[0]
            draft.add_child(group, child, where)
            pending.setdefault(child, (where, f"[{group}:children] names group '{child}' that is never declared"))
        else:
            name, value = _assignment(line, where)
            draft.groups[group].vars[name] = inventory_setting(name, value, shown, number, f"group {group}",
                                                               base_dir)
    for name, (where, what) in pending.items():
        if name not in declared:
            raise InputError(what, where)


def _host_line(line: str, group: str, where: str, shown: str, number: int, base_dir: str,
               draft: InventoryDraft) -> None:
    tokens = _tokens(line, where)
    pattern, port = split_host_port(tokens[0])
    assignments = [_assignment(token, where) for token in tokens[1:]]
    for name in expand_host_range(pattern, where):
        host = draft.add_host(None if group in ("all", "ungrouped") else group, name, where)
        if port is not None:
            host.vars["ansible_port"] = inventory_setting("ansible_port", port, shown, number, "host", base_dir)
        for var, value in assignments:
            host.vars[var] = inventory_setting(var, value, shown, number, "host", base_dir)


def _assignment(text: str, where: str) -> tuple[str, Any]:
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise InputError(f"expected key=value, found {text!r}", where)
    return name.strip(), parse_ini_value(_strip_comment(value.strip()))


def parse_ini_value(raw: str) -> Any:
    """Like Ansible: a Python literal if it is one (3, 2.5, True, [1, 2], 'quoted'), else the text.
    A quoted value stays a string, so port="22" is the string '22'."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return raw


def _tokens(line: str, where: str) -> list[str]:
    """Split on blanks outside quotes, keeping the quotes (so values can tell "3" from 3);
    a '#' starting a token starts a comment."""
    tokens: list[str] = []
    current, quote = "", None
    for char in line:
        if quote:
            current += char
            if char == quote:
                quote = None
        elif char in "'\"":
            current += char
            quote = char
        elif char.isspace():
            if current:
                tokens.append(current)
            current = ""
        elif char == "#" and not current:
            break
        else:
            current += char
    if quote:
        raise InputError(f"unterminated quote in {line!r}", where)
    if current:
        tokens.append(current)
    if not tokens:
        raise InputError(f"expected a name, found {line!r}", where)
    return tokens


def _strip_comment(value: str) -> str:
    quote = None
    for index, char in enumerate(value):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and index > 0 and value[index - 1].isspace():
            return value[:index].rstrip()
    return value
