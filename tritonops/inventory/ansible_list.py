"""`ansible-inventory --list --export` JSON -> the same draft the YAML and INI readers fill. Pure.

The JSON: `{"_meta": {"hostvars": {HOST: {VAR: VALUE}}}, GROUP: {"hosts": [...], "children": [...],
"vars": {...}}}` (with --export, group variables stay on their group and each host keeps only its own,
so tritonops' layers resolve them as for a YAML inventory). Ansible writes a `!vault` value it has not
decrypted as `{"__ansible_vault": CIPHERTEXT}`: `vault_ciphertexts` lists them, the caller decrypts them
(ansible-vault) and `add_ansible_list` puts the plain text in, marked `SecretText` so it is never shown.

No file:line survives ansible-inventory: every value's provenance is "ansible-inventory:SOURCE".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tritonops.errors import InputError
from tritonops.inventory.draft import InventoryDraft, check_var_name
from tritonops.inventory.model import Setting
from tritonops.redact import SecretText

VAULT_KEY = "__ansible_vault"
_GROUP_KEYS = ("hosts", "children", "vars")


def provenance(source: str) -> str:
    return f"ansible-inventory:{source}"


def vault_ciphertexts(data: Any) -> Iterator[tuple[str, str]]:
    """(where, ciphertext) of every undecrypted `!vault` value in the JSON, where = 'host H var V' or
    'group G var V'."""
    if not isinstance(data, dict):
        return
    hostvars = data.get("_meta", {}).get("hostvars", {}) if isinstance(data.get("_meta"), dict) else {}
    for host, values in (hostvars.items() if isinstance(hostvars, dict) else ()):
        yield from _ciphertexts(f"host {host}", values)
    for group, body in data.items():
        if group != "_meta" and isinstance(body, dict):
            yield from _ciphertexts(f"group {group}", body.get("vars"))


def _ciphertexts(scope: str, values: Any) -> Iterator[tuple[str, str]]:
    if isinstance(values, dict):
        for name, value in values.items():
            if _is_vault(value):
                yield f"{scope} var {name}", value[VAULT_KEY]
            elif isinstance(value, (dict, list)):
                yield from _ciphertexts(f"{scope} var {name}", value if isinstance(value, dict)
                                        else dict(enumerate(value)))


def add_ansible_list(data: Any, source: str, base_dir: str, draft: InventoryDraft,
                     decrypted: Mapping[str, str], secret_vars: Mapping[tuple[str, str], set[str]] | None = None
                     ) -> None:
    """Put the hosts, groups and variables of one ansible-inventory run into `draft`; `decrypted` maps
    each vault ciphertext to its plain text; `secret_vars` names, per ('group'|'host', name), variables
    that came from a var file encrypted whole (marked secret too). An entry that cannot be mapped raises,
    naming it."""
    secret_vars = secret_vars or {}
    where = provenance(source)
    if not isinstance(data, dict):
        raise InputError(f"ansible-inventory gave {_kind(data)}, not a mapping of groups", where)
    meta = data.get("_meta", {})
    hostvars = meta.get("hostvars", {}) if isinstance(meta, dict) else None
    if not isinstance(hostvars, dict):
        raise InputError("ansible-inventory's _meta.hostvars is not a mapping of hosts", where)
    groups = {name: _group_body(name, body, where) for name, body in data.items() if name != "_meta"}
    values = _Values(where, base_dir, decrypted)
    for name in _group_order(groups):
        body = groups[name]
        group = draft.group(name, where)
        for var, value in _mapping(body.get("vars"), f"group '{name}' vars", where).items():
            group.vars[var] = values.setting(var, value, f"group {name}", var in secret_vars.get(("group", name), ()))
        for host in _names(body.get("hosts"), f"group '{name}' hosts", where):
            draft.add_host(None if name in ("all", "ungrouped") else name, host, where)
        for child in _names(body.get("children"), f"group '{name}' children", where):
            if not (name == "all" and child == "ungrouped"):
                draft.add_child(name, child, where)
    for host, host_vars in hostvars.items():
        if not isinstance(host, str) or not host:
            raise InputError(f"a host name must be a non-empty string, not {host!r}", where)
        entry = draft.add_host(None, host, where)
        for var, value in _mapping(host_vars, f"host '{host}' vars", where).items():
            entry.vars[var] = values.setting(var, value, "host", var in secret_vars.get(("host", host), ()))


class _Values:
    def __init__(self, where: str, base_dir: str, decrypted: Mapping[str, str]):
        self.where, self.base_dir, self.decrypted = where, base_dir, decrypted

    def setting(self, name: Any, value: Any, scope: str, secret: bool = False) -> Setting:
        check_var_name(name, f"{self.where} ({scope})")
        value = self.value(value, f"{scope} var {name}")
        return Setting(_secret(value) if secret else value, f"{self.where} ({scope})", self.where, self.base_dir)

    def value(self, value: Any, what: str) -> Any:
        if _is_vault(value):
            if value[VAULT_KEY] not in self.decrypted:
                raise InputError(f"{what}: a Vault value that was not decrypted", self.where)
            return SecretText(self.decrypted[value[VAULT_KEY]])
        if isinstance(value, dict):
            return {key: self.value(item, f"{what}.{key}") for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item, f"{what}[{index}]") for index, item in enumerate(value)]
        return value


def _secret(value: Any) -> Any:
    """Every string in `value` marked secret (a number or a boolean is left as it is: it cannot be marked)."""
    if isinstance(value, str):
        return SecretText(value)
    if isinstance(value, dict):
        return {key: _secret(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_secret(item) for item in value]
    return value


def secret_texts(value: Any) -> Iterator[str]:
    """The SecretText strings inside a value."""
    if isinstance(value, SecretText):
        yield str.__str__(value)
    elif isinstance(value, dict):
        for item in value.values():
            yield from secret_texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from secret_texts(item)


def var_file_names(text: str) -> set[str]:
    """The top-level variable names of a decrypted var file (YAML or JSON); Ansible's own tags are
    accepted (their values do not matter here)."""
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        return set()  # Ansible read it; nothing to mark beyond what it listed
    return {str(name) for name in data} if isinstance(data, dict) else set()


def _group_body(name: str, body: Any, where: str) -> dict:
    if body is None:
        return {}
    if isinstance(body, list):  # a script's shorthand: a group as the list of its hosts
        return {"hosts": body}
    if not isinstance(body, dict):
        raise InputError(f"group '{name}' must be a mapping with hosts, children or vars, not {_kind(body)}", where)
    unknown = [key for key in body if key not in _GROUP_KEYS]
    if unknown:
        raise InputError(f"group '{name}' has unknown key '{unknown[0]}' (expected hosts, children or vars)", where)
    return body


def _group_order(groups: dict[str, dict]) -> list[str]:
    """'all' first, then depth first along `children` (lists keep Ansible's inventory order; the group
    keys themselves come sorted), then any group no other lists."""
    order: list[str] = []
    pending = ["all"] if "all" in groups else []
    while pending:
        name = pending.pop(0)
        if name in order or name not in groups:
            continue
        order.append(name)
        children = groups[name].get("children")
        pending[:0] = [child for child in children if isinstance(child, str)] if isinstance(children, list) else []
    return order + [name for name in groups if name not in order]


def _mapping(value: Any, what: str, where: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{what} must be a mapping, not {_kind(value)}", where)
    return value


def _names(value: Any, what: str, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise InputError(f"{what} must be a list of names, not {value!r}"[:300], where)
    return value


def _is_vault(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {VAULT_KEY} and isinstance(value[VAULT_KEY], str)


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", int: "a number", bool: "a boolean", float: "a number"}.get(
        type(value), type(value).__name__)
