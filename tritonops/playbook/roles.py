"""Roles: where a role named in a play is found, and what its folder holds.

A role `r` is the folder `roles/r/` next to the playbook, else `r/` in each folder of the roles path
(given by the caller, e.g. from --roles-path or TRITONOPS_ROLES_PATH), first match wins, like
Ansible's playbook-relative `roles/` then `roles_path`. Its folder holds:

    defaults/main.yml    variables, the lowest layer (each keeps its file:line)
    tasks/main.yml       the tasks, run in order
    handlers/main.yml    tasks run once at the end of a batch when notified
    templates/           files for lookup('template', NAME)
    files/               files for lookup('file', NAME)

Role vars (vars/main.yml) and dependencies (meta/main.yml) are not supported: a role that has
them is refused rather than half-run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from tritonops.inventory.draft import check_var_name
from tritonops.inventory.model import Setting
from tritonops.inventory.paths import display_path
from tritonops.inventory.yaml_lines import LinedMap, plain
from tritonops.playbook.keys import check_known_vars, did_you_mean, load_yaml
from tritonops.playbook.model import PlaybookError, Role

ROLES_FOLDER = "roles"


def role_dirs(playbook_dir: str, roles_path: Sequence[str]) -> list[str]:
    return [os.path.join(playbook_dir, ROLES_FOLDER), *roles_path]


def find_role(name: object, where: str, search: Sequence[str]) -> str:
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        raise PlaybookError(f"a role is named by a plain name (a folder under roles/), not {name!r}", where)
    for folder in search:
        candidate = os.path.join(folder, name)
        if os.path.isdir(candidate):
            return candidate
    known = sorted({entry for folder in search if os.path.isdir(folder) for entry in os.listdir(folder)
                    if os.path.isdir(os.path.join(folder, entry))})
    looked = ", ".join(display_path(folder) for folder in search)
    hint = did_you_mean(name, known) if known else ""
    raise PlaybookError(f"no role named '{name}' (looked in {looked}){hint}", where)


def read_role_file(role_path: str, folder: str) -> tuple[object, str] | None:
    """The parsed `folder/main.yml` (or .yaml) of a role and how it is shown; None when absent."""
    for name in ("main.yml", "main.yaml"):
        path = os.path.join(role_path, folder, name)
        if os.path.isfile(path):
            shown = display_path(path)
            return load_yaml(path, shown), shown
    return None


def read_defaults(name: str, role_path: str) -> dict[str, Setting]:
    found = read_role_file(role_path, "defaults")
    if found is None or found[0] is None:
        return {}
    data, shown = found
    if not isinstance(data, LinedMap):
        raise PlaybookError("role defaults must be a mapping of name: value", f"{shown}:1")
    defaults = {}
    for var, value in data.items():
        where = f"{shown}:{data.line_of(var)}"
        check_var_name(var, where)
        if var.startswith("ansible_"):
            raise PlaybookError(f"'{var}' in role defaults: say how hosts are reached in the inventory", where)
        defaults[var] = Setting(plain(value), f"{where} (role {name} defaults)", where, role_path)
    check_known_vars(defaults)
    return defaults


def refuse_unsupported(role_path: str) -> None:
    """vars/ and meta/ dependencies would change what runs; an empty skeleton file is fine."""
    found = read_role_file(role_path, "vars")
    if found is not None and found[0]:
        raise PlaybookError("role vars are not supported: put them in defaults/main.yml or the play's vars",
                            f"{found[1]}:1")
    found = read_role_file(role_path, "meta")
    if found is not None and isinstance(found[0], dict) and found[0].get("dependencies"):
        raise PlaybookError("role dependencies are not supported: list the roles in the play, in order",
                            f"{found[1]}:{found[0].line_of('dependencies')}")


def load_role(name: object, where: str, search: Sequence[str], tasks_reader, tags: frozenset[str]) -> Role:
    """`tasks_reader(data, shown, role=..., tags=..., role_path=...)` turns a task list into Tasks."""
    path = find_role(name, where, search)
    refuse_unsupported(path)
    tasks = handlers = ()
    found = read_role_file(path, "tasks")
    if found is not None:
        tasks = tasks_reader(found[0], found[1], role=name, tags=tags, role_path=path)
    found = read_role_file(path, "handlers")
    if found is not None:
        handlers = tasks_reader(found[0], found[1], role=name, tags=frozenset(), role_path=path)
    return Role(name, path, read_defaults(name, path), tuple(tasks), tuple(handlers))
