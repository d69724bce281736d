"""load_inventory: inventory files and folders -> an Inventory with resolved variables and connections."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from tritonops.errors import InputError
from tritonops.inventory.ansible_list import (add_ansible_list, provenance, secret_texts, var_file_names,
                                              vault_ciphertexts)
from tritonops.inventory.ansible_run import (AnsibleOptions, decrypt_vault_text, decrypt_vault_values,
                                             run_ansible_inventory)
from tritonops.inventory.ansible_sources import ansible_reason, encrypted_var_files
from tritonops.inventory.connection import connection_from_vars
from tritonops.inventory.draft import InventoryDraft, check_var_name
from tritonops.inventory.group_tree import GroupTree, build_group_tree
from tritonops.inventory.ini_source import read_ini_inventory
from tritonops.inventory.known_vars import check_known
from tritonops.inventory.layers import VarSources, group_precedence_key, host_layers, stack
from tritonops.inventory.model import Group, Host, Inventory, Setting
from tritonops.inventory.paths import display_path, inventory_files_in, inventory_format
from tritonops.inventory.ssh_config import load_ssh_config
from tritonops.inventory.var_files import read_var_folder
from tritonops.inventory.yaml_source import read_yaml_inventory
from tritonops.values.files import FileReads, read_regular_text


def load_inventory(paths: list[str], *, ssh_config_file: str | None = None,
                   defaults: Mapping[str, Any] | None = None,
                   extra_vars: Mapping[str, Any] | None = None, ansible: AnsibleOptions | None = None
                   ) -> Inventory:
    """Read inventory files (YAML or INI) or folders of them, like `ansible -i`.

    ssh_config_file: None -> $TRITONOPS_SSH_CONFIG, else ~/.ssh/config if it exists; pass a
    file (or os.devnull) to decide exactly which client config applies.
    ansible: how a source the built-in reader leaves to Ansible (a script, a plugin, Vault data:
    ansible_sources.py) is read by ansible-inventory; None: no vault password, only such sources."""
    ansible = ansible or AnsibleOptions()
    reads = FileReads()  # each file opened once, whoever looks at it
    draft = InventoryDraft()
    var_dirs: list[str] = []
    shown_sources: list[str] = []
    for given in _given_paths(paths):
        if ansible.always or ansible_reason(given, reads):
            shown = display_path(given) if os.path.exists(given) else given
            read_with_ansible_inventory(given, shown, ansible, draft)
            shown_sources.append(provenance(shown))
            continue
        found, folders = _inventory_files([given])
        for path in found:
            reader = read_yaml_inventory if inventory_format(path) == "yaml" else read_ini_inventory
            reader(path, display_path(path), draft, reads)
        shown_sources += [display_path(path) for path in found]
        var_dirs += [folder for folder in folders if folder not in var_dirs]
    return _resolved(draft, var_dirs, tuple(shown_sources), ssh_config_file, defaults, extra_vars, reads)


def inventory_of_hosts(hosts: Mapping[str, Mapping[str, Any]], *, group_vars: Mapping[str, Any] | None = None,
                       ssh_config_file: str | None = None, extra_vars: Mapping[str, Any] | None = None,
                       source: str = "hosts=") -> Inventory:
    """An inventory given as data rather than files (tritonops.api's `hosts=`): each host in group 'all' with
    its own variables, `group_vars` as all's, resolved and checked exactly as a file's would be (the connection
    variables, known names, -e over everything). Provenance names `source` and the key, e.g. hosts=['gpu1']."""
    draft = InventoryDraft()
    base_dir = os.getcwd()
    group = draft.group("all", source)
    for var, value in (group_vars or {}).items():
        check_var_name(var, f"vars[{var!r}]")
        group.vars[var] = Setting(value, f"{source} vars", f"vars[{var!r}]", base_dir)
    for name, values in hosts.items():
        where = f"{source}[{name!r}]"
        if not isinstance(name, str) or not name:
            raise InputError(f"a host name must be a non-empty string, not {name!r}", source)
        if not isinstance(values, Mapping):
            raise InputError(f"host {name!r} must map to its variables, not {type(values).__name__}", where)
        host = draft.add_host(None, name, where)
        for var, value in values.items():
            check_var_name(var, f"{where}[{var!r}]")
            host.vars[var] = Setting(value, f"{source} (host {name})", f"{where}[{var!r}]", base_dir)
    return _resolved(draft, [], (source,), ssh_config_file, None, extra_vars, FileReads())


def _resolved(draft: InventoryDraft, var_dirs: list[str], shown: tuple[str, ...], ssh_config_file: str | None,
              defaults: Mapping[str, Any] | None, extra_vars: Mapping[str, Any] | None, reads: FileReads) -> Inventory:
    """Every host's variables through the layers (provenance kept) and its connection."""
    tree = build_group_tree(draft)
    sources, warnings = _var_sources(draft, tree, var_dirs, defaults or {}, extra_vars or {}, reads)
    check_known(_every_setting(sources))
    priority = {name: _priority(name, sources) for name in tree.order}
    ssh_config, ssh_config_path = load_ssh_config(ssh_config_file)

    def precedence(group: str) -> tuple[int, int, str]:
        return group_precedence_key(group, tree.depth[group], priority[group])

    direct_groups: dict[str, list[str]] = {name: [] for name in draft.hosts}
    for group in tree.order:
        for name in tree.direct_hosts[group]:
            direct_groups[name].append(group)
    hosts = []
    for name, direct in direct_groups.items():
        groups = sorted(tree.ancestors_and_self(direct) | {"all"}, key=precedence)
        values, history = stack(host_layers(name, groups[1:], sources))
        connection = connection_from_vars(name, history, ssh_config, ssh_config_path, draft.hosts[name].where)
        hosts.append(Host(name, tuple(groups), connection, values, history))
    return Inventory(tuple(hosts), _groups(tree, sources, priority), shown, tuple(warnings))


def _given_paths(paths: list[str]) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]  # one path given bare: not a list of one-letter paths
    if not paths:
        raise InputError("no inventory given: pass -i PATH", "-i")
    return [os.fspath(path) for path in paths]


def read_with_ansible_inventory(source: str, shown: str, options: AnsibleOptions, draft: InventoryDraft) -> None:
    """One source read by `ansible-inventory --list`, its `!vault` values decrypted, into `draft`.
    Its group_vars/ and host_vars/ are Ansible's to read too (they may be encrypted): they come in its list."""
    data = run_ansible_inventory(source, options)
    decrypted = decrypt_vault_values(vault_ciphertexts(data), shown, options)
    secret_vars: dict[tuple[str, str], set[str]] = {}
    for scope, name, path in encrypted_var_files(source) if os.path.exists(source) else ():
        text = decrypt_vault_text(read_regular_text(path, display_path(path), what="vault file"),
                                  display_path(path), shown, options)
        secret_vars.setdefault((scope, name), set()).update(var_file_names(text))
    base_dir = os.path.abspath(source if os.path.isdir(source) else os.path.dirname(source) or ".")
    add_ansible_list(data, shown, base_dir, draft, decrypted, secret_vars)
    if options.on_secret is not None:
        for settings in [group.vars for group in draft.groups.values()] + [host.vars for host in draft.hosts.values()]:
            for setting in settings.values():
                for secret in secret_texts(setting.value):
                    options.on_secret(secret)


def _inventory_files(paths: list[str]) -> tuple[list[str], list[str]]:
    files: list[str] = []
    var_dirs: list[str] = []
    for given in paths:
        if os.path.isdir(given):
            found = inventory_files_in(given)
            if not found:
                raise InputError("no inventory files (.yml, .yaml, .ini or no extension) in this folder", given)
            files += found
            folder = given
        elif os.path.isfile(given):
            files.append(given)
            folder = os.path.dirname(given) or "."
        elif os.path.exists(given):
            raise InputError(f"not a regular file or folder: {given}", "-i")
        else:
            raise InputError(f"no such inventory file or folder: {given}", "-i")
        folder = os.path.abspath(folder)
        if folder not in var_dirs:
            var_dirs.append(folder)
    return files, var_dirs


def _var_sources(draft: InventoryDraft, tree: GroupTree, var_dirs: list[str], defaults: Mapping[str, Any],
                 extra_vars: Mapping[str, Any], reads: FileReads) -> tuple[VarSources, list[str]]:
    file_group_vars: dict[str, list[dict[str, Setting]]] = {}
    file_host_vars: dict[str, list[dict[str, Setting]]] = {}
    warnings = []
    for folder in var_dirs:
        for kind, names, merged in (("group_vars", list(tree.order), file_group_vars),
                                    ("host_vars", list(draft.hosts), file_host_vars)):
            found, unmatched = read_var_folder(folder, kind, names, reads)
            for name, settings in found.items():
                merged.setdefault(name, []).extend(settings)
            what = "group" if kind == "group_vars" else "host"
            warnings += [f"{display_path(path)}: no {what} of that name in the inventory; not used"
                         for path in unmatched]
    cwd = os.getcwd()
    sources = VarSources(
        defaults=_given(defaults, "role defaults", cwd),
        inventory_group_vars={name: group.vars for name, group in draft.groups.items()},
        file_group_vars=file_group_vars,
        inventory_host_vars={name: host.vars for name, host in draft.hosts.items()},
        file_host_vars=file_host_vars,
        extra_vars=_given(extra_vars, "extra vars (-e)", cwd),
    )
    return sources, warnings


def _given(values: Mapping[str, Any], source: str, base_dir: str) -> dict[str, Setting]:
    """Values given by the caller; a value that is already a Setting keeps its own provenance
    (role defaults read from roles/<r>/defaults/main.yml carry their file:line)."""
    where = "-e" if source.startswith("extra") else source
    settings = {}
    for name, value in values.items():
        given = value if isinstance(value, Setting) else Setting(value, source, where, base_dir)
        check_var_name(name, given.where)
        settings[name] = given
    return settings


def _every_setting(sources: VarSources) -> Iterator[tuple[str, Setting]]:
    yield from sources.defaults.items()
    for per_name in (sources.inventory_group_vars, sources.inventory_host_vars):
        for settings in per_name.values():
            yield from settings.items()
    for per_file in (sources.file_group_vars, sources.file_host_vars):
        for files in per_file.values():
            for settings in files:
                yield from settings.items()
    yield from sources.extra_vars.items()


def _group_settings(name: str, sources: VarSources) -> dict[str, Setting]:
    merged = dict(sources.inventory_group_vars.get(name, {}))
    for settings in sources.file_group_vars.get(name, ()):
        merged.update(settings)
    return merged


def _priority(name: str, sources: VarSources) -> int:
    setting = _group_settings(name, sources).get("ansible_group_priority")
    if setting is None:
        return 1
    if isinstance(setting.value, bool) or not isinstance(setting.value, int):
        raise InputError(f"ansible_group_priority must be a whole number, not {setting.value!r}", setting.where)
    return setting.value


def _groups(tree: GroupTree, sources: VarSources, priority: dict[str, int]) -> dict[str, Group]:
    return {
        name: Group(name, tree.direct_hosts[name], tree.children[name], tree.parents[name],
                    {var: setting.value for var, setting in _group_settings(name, sources).items()},
                    tree.depth[name], priority[name])
        for name in tree.order
    }
