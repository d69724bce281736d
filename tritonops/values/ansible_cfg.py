"""Ansible's own configuration, read as Ansible reads it (issue #45 item 7): the first of $ANSIBLE_CONFIG,
./ansible.cfg (not in a world-writable folder, as Ansible refuses it), ~/.ansible.cfg, /etc/ansible/ansible.cfg; its
[defaults] `inventory`, `remote_user`, `private_key_file`, `forks`, `host_key_checking` and [privilege_escalation]
`become`, each under the environment variable Ansible reads for it ($ANSIBLE_INVENTORY, $ANSIBLE_REMOTE_USER, ...).
The command line is above both, and for the connection settings the inventory's own variables are (ansible_user
over -u and remote_user, as in Ansible). A path in the file is relative to the file's folder; a value that is not what
Ansible takes is a one-line error naming the file, line and key.
"""

from __future__ import annotations

import configparser
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from tritonops.errors import InputError

SYSTEM_CONFIG = "/etc/ansible/ansible.cfg"
_TRUE = ("1", "true", "yes", "on", "y", "t")
_FALSE = ("0", "false", "no", "off", "n", "f")
# key -> (section, environment variable, kind)
KEYS = {"inventory": ("defaults", "ANSIBLE_INVENTORY", "paths"),
        "remote_user": ("defaults", "ANSIBLE_REMOTE_USER", "text"),
        "private_key_file": ("defaults", "ANSIBLE_PRIVATE_KEY_FILE", "path"),
        "forks": ("defaults", "ANSIBLE_FORKS", "count"),
        "host_key_checking": ("defaults", "ANSIBLE_HOST_KEY_CHECKING", "boolean"),
        "become": ("privilege_escalation", "ANSIBLE_BECOME", "boolean")}


@dataclass(frozen=True)
class AnsibleConfig:
    path: str | None = None                 # the file read (None: none found)
    inventory: tuple[str, ...] = ()
    remote_user: str | None = None
    private_key_file: str | None = None
    forks: int | None = None
    host_key_checking: bool | None = None
    become: bool | None = None
    where: Mapping[str, str] | None = None  # each key set -> where it was set (ansible.cfg:4, $ANSIBLE_FORKS)


def config_file(env: Mapping[str, str], cwd: str, home: str) -> str | None:
    """The file Ansible would read: the first of these that exists."""
    if env.get("ANSIBLE_CONFIG"):
        given = os.path.expanduser(env["ANSIBLE_CONFIG"])
        return os.path.join(given, "ansible.cfg") if os.path.isdir(given) else given
    here = os.path.join(cwd, "ansible.cfg")
    if os.path.isfile(here) and not os.stat(cwd).st_mode & stat.S_IWOTH:
        return here
    for path in (os.path.join(home, ".ansible.cfg"), SYSTEM_CONFIG):
        if os.path.isfile(path):
            return path
    return None


def ansible_config(env: Mapping[str, str], cwd: str, home: str) -> AnsibleConfig:
    """The settings tritonops takes from Ansible's configuration file and environment."""
    path = config_file(env, cwd, home)
    values: dict[str, tuple[str, str, str]] = {}  # key -> (text, where, base folder for paths)
    if path is not None:
        values.update(_read(path))
    for key, (_, variable, _) in KEYS.items():
        if env.get(variable, "") != "":
            values[key] = (env[variable], f"${variable}", cwd)
    fields = {key: _value(key, *found) for key, found in values.items()}
    return AnsibleConfig(path, **fields, where={key: found[1] for key, found in values.items()})


def _read(path: str) -> dict[str, tuple[str, str, str]]:
    shown = os.path.basename(path) if os.path.dirname(os.path.abspath(path)) == os.getcwd() else path
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";",), strict=False)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        parser.read_string(text, source=shown)
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read Ansible's configuration: {err}", shown) from None
    except configparser.Error as err:
        raise InputError(f"not an INI file Ansible reads: {str(err).splitlines()[0]}", shown) from None
    lines = text.splitlines()
    found = {}
    for key, (section, _, _) in KEYS.items():
        if parser.has_option(section, key):
            found[key] = (parser.get(section, key).strip(), f"{shown}:{_line_of(lines, section, key)}",
                          os.path.dirname(os.path.abspath(path)))
    return found


def _line_of(lines: list[str], section: str, key: str) -> int:
    """The line (1-based) that sets `key` in `[section]`."""
    current = None
    for number, row in enumerate(lines, 1):
        text = row.strip()
        if text.startswith("[") and text.endswith("]"):
            current = text[1:-1].strip()
        elif current == section and text.split("=", 1)[0].split(":", 1)[0].strip() == key:
            return number
    return 0


def _value(key: str, text: str, where: str, base: str):
    kind = KEYS[key][2]
    if kind == "paths":
        return tuple(_path(part.strip(), base) for part in text.split(",") if part.strip())
    if kind == "path":
        return _path(text, base)
    if kind == "count":
        if not text.isdigit() or int(text) < 1:
            raise InputError(f"{key} must be a whole number of 1 or more, not {text!r}", where)
        return int(text)
    if kind == "boolean":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise InputError(f"{key} must be true or false, not {text!r}", where)
    if not text or any(c.isspace() for c in text):
        raise InputError(f"{key} must be one word, not {text!r}", where)
    return text


def _path(text: str, base: str) -> str:
    """A path as Ansible takes it from its configuration: ~ expanded, relative to the file's folder."""
    expanded = os.path.expanduser(text)
    return expanded if os.path.isabs(expanded) else os.path.normpath(os.path.join(base, expanded))
