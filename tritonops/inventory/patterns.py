"""Ansible host patterns: which hosts `--limit` (or a play's hosts:) selects.

Forms: name (group or host), a:b / a,b (union), a:&b (intersection), a:!b (exclusion),
wildcards web*, regular expressions ~web\\d+, subscripts group[0] / group[1:3] (end included),
all / *, and @file (one pattern per line). Unions apply first, then intersections, then
exclusions, as in Ansible. The result is always in inventory order.
"""

from __future__ import annotations

import difflib
import fnmatch
import ipaddress
import re

from tritonops.errors import InputError

_TERMS_ON_COLONS = re.compile(r"(?:[^:\[\]]|\[[^\]]*\])+")
_SUBSCRIPT = re.compile(r"^(.+?)\[(-?\d*)(?::(-?\d*))?\]$")


def select_hosts(inventory, pattern: str | None) -> tuple:
    """`inventory` is an Inventory (duck-typed: .hosts, .groups, .hosts_in)."""
    text = "all" if pattern is None or not str(pattern).strip() else str(pattern).strip()
    terms = split_pattern(text)
    unions = [term for term in terms if term[0] not in "&!"] or ["all"]
    intersections = [term[1:] for term in terms if term[0] == "&"]
    exclusions = [term[1:] for term in terms if term[0] == "!"]
    chosen: set[str] = set()
    for term in unions:
        chosen.update(_match(inventory, term, text))
    for term in intersections:
        chosen &= set(_match(inventory, term, text))
    for term in exclusions:
        chosen -= set(_match(inventory, term, text))
    selected = tuple(host for host in inventory.hosts if host.name in chosen)
    if not selected:
        raise InputError(f"host pattern {text!r} selects no hosts")
    return selected


def split_pattern(pattern: str) -> list[str]:
    if "," in pattern:
        parts = pattern.split(",")
    elif _is_ipv6(pattern):
        parts = [pattern]
    else:
        parts = _TERMS_ON_COLONS.findall(pattern)
    terms: list[str] = []
    for part in (part.strip() for part in parts):
        if part.startswith("@"):
            terms.extend(_read_pattern_file(part[1:]))
        elif part and part not in ("&", "!"):
            terms.append(part)
    return terms


def unknown_name_error(name: str, candidates: list[str], what: str, pattern: str | None = None) -> InputError:
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    context = f" (in host pattern {pattern!r})" if pattern and pattern != name else ""
    return InputError(f"no {what} named '{name}'{context}{hint}")


def _match(inventory, term: str, pattern: str) -> list[str]:
    if term in ("all", "*"):
        return [host.name for host in inventory.hosts]
    subscript = _SUBSCRIPT.match(term) if not term.startswith("~") else None
    if subscript and subscript.group(1) in inventory.groups:
        return _subscript(inventory, subscript, term)
    host_names = [host.name for host in inventory.hosts]
    if term.startswith("~"):
        try:
            regex = re.compile(term[1:])
        except re.error as err:
            raise InputError(f"invalid regular expression in host pattern {term!r}: {err}") from None
        matches = regex.match
    elif any(char in term for char in "*?["):
        matches = re.compile(fnmatch.translate(term)).match
    else:
        if term in inventory.groups:
            return [host.name for host in inventory.hosts_in(term)]
        if term in host_names:
            return [term]
        raise unknown_name_error(term, list(inventory.groups) + host_names, "host or group", pattern)
    found = [host.name for group in inventory.groups if matches(group) for host in inventory.hosts_in(group)]
    return found + [name for name in host_names if matches(name)]


def _subscript(inventory, match: re.Match, term: str) -> list[str]:
    members = [host.name for host in inventory.hosts_in(match.group(1))]
    start_text, end_text = match.group(2), match.group(3)
    try:
        if end_text is None:  # group[3]
            return [members[int(start_text)]]
        start = int(start_text) if start_text else 0
        end = int(end_text) if end_text else len(members) - 1
        return members[start : (end + 1) or None]
    except (IndexError, ValueError):
        raise InputError(f"host pattern {term!r}: '{match.group(1)}' has {len(members)} hosts") from None


def _read_pattern_file(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError as err:
        raise InputError(f"cannot read host list @{path}: {err.strerror}") from None
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def _is_ipv6(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).version == 6
    except ValueError:
        return False
