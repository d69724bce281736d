"""Ansible host patterns: which hosts `--limit` (or a play's hosts:) selects.

Forms: name (group or host), a:b / a,b (union), a:&b (intersection), a:!b (exclusion),
wildcards web*, regular expressions ~web\\d+, subscripts group[0] / group[1:3] (end included),
all / *, and @file (one pattern per line). Unions apply first, then intersections, then
exclusions, as in Ansible (a pattern of only exclusions starts from all). The result is always in
inventory order.

A pattern that selects nothing is an error, never "everything": an empty --limit, a lone '!', '&' or
':', an empty @file. Regular expressions run with the `regex` module under a time budget, so a
pattern with catastrophic backtracking is refused instead of hanging; @file must be a regular file.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
import time

from tritonops.errors import InputError
from tritonops.text import close_matches
from tritonops.values.files import read_regular_text

REGEX_BUDGET_S = 1.0  # all of one pattern's regular-expression matching together
MAX_PATTERN_FILE_BYTES = 1024 * 1024

_TERMS_ON_COLONS = re.compile(r"(?:[^:\[\]]|\[[^\]]*\])+")
_SUBSCRIPT = re.compile(r"^(.+?)\[(-?\d*)(?::(-?\d*))?\]$")


def select_hosts(inventory, pattern: str | None) -> tuple:
    """`inventory` is an Inventory (duck-typed: .hosts, .groups, .hosts_in)."""
    text = "all" if pattern is None else str(pattern).strip()
    if not text:
        raise InputError("the host pattern is empty: name hosts or groups, or 'all'", "--limit")
    terms = split_pattern(text)
    if not terms:
        raise InputError(f"host pattern {text!r} names no hosts or groups", "--limit")
    unions = [term for term in terms if term[0] not in "&!"] or ["all"]
    intersections = [term[1:] for term in terms if term[0] == "&"]
    exclusions = [term[1:] for term in terms if term[0] == "!"]
    chosen: set[str] = set()
    deadline = time.monotonic() + REGEX_BUDGET_S
    for term in unions:
        chosen.update(_match(inventory, term, text, deadline))
    for term in intersections:
        chosen &= set(_match(inventory, term, text, deadline))
    for term in exclusions:
        chosen -= set(_match(inventory, term, text, deadline))
    selected = tuple(host for host in inventory.hosts if host.name in chosen)
    if not selected:
        raise InputError(f"host pattern {text!r} selects no hosts", "--limit")
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
        elif part in ("&", "!"):
            raise InputError(f"host pattern {pattern!r}: '{part}' needs a host or group after it", "--limit")
        elif part:
            terms.append(part)
    return terms


def unknown_name_error(name: str, candidates: list[str], what: str, pattern: str | None = None,
                       where: str | None = None) -> InputError:
    close = close_matches(name, candidates, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    context = f" (in host pattern {pattern!r})" if pattern and pattern != name else ""
    return InputError(f"no {what} named '{name}'{context}{hint}", where)


def _match(inventory, term: str, pattern: str, deadline: float) -> list[str]:
    if term in ("all", "*"):
        return [host.name for host in inventory.hosts]
    subscript = _SUBSCRIPT.match(term) if not term.startswith("~") else None
    if subscript and subscript.group(1) in inventory.groups:
        return _subscript(inventory, subscript, term)
    host_names = [host.name for host in inventory.hosts]
    if term.startswith("~"):
        matches = _bounded_regex(term, deadline)
    elif any(char in term for char in "*?["):
        matches = re.compile(fnmatch.translate(term)).match
    else:
        if term in inventory.groups:
            return [host.name for host in inventory.hosts_in(term)]
        if term in host_names:
            return [term]
        raise unknown_name_error(term, list(inventory.groups) + host_names, "host or group", pattern, "--limit")
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
        raise InputError(f"host pattern {term!r}: '{match.group(1)}' has {len(members)} hosts", "--limit") from None


def _bounded_regex(term: str, deadline: float):
    import regex  # only `~` patterns need it (~20 ms to load)

    try:
        compiled = regex.compile(term[1:])
    except (regex.error, RecursionError, OverflowError) as err:
        raise InputError(f"invalid regular expression in host pattern {term!r}: {err}", "--limit") from None

    def matches(name: str):
        try:
            return compiled.match(name, timeout=max(deadline - time.monotonic(), 0.001))
        except TimeoutError:
            raise InputError(f"regular expression in host pattern {term!r} took longer than {REGEX_BUDGET_S:g}s "
                             "to match the inventory's names; simplify it", "--limit") from None
    return matches


def _read_pattern_file(path: str) -> list[str]:
    where = f"@{path}"
    text = read_regular_text(path, where, max_bytes=MAX_PATTERN_FILE_BYTES, what="host list")
    terms = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    if not terms:
        raise InputError("host list names no hosts", where)
    return terms


def _is_ipv6(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).version == 6
    except ValueError:
        return False
