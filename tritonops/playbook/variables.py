"""A host's variables in a play, as an explicit stack of layers (lowest first, a later one wins):

    1 role defaults of the play's roles      (load_inventory(defaults=...), file:line kept)
    2 inventory: groups, then the host       (load_inventory's own layers, see inventory/layers.py)
    3 host facts given by the caller         (tritonops' probe and plan values; Ansible's facts level)
    4 play vars                              (the play's `vars:`, file:line kept)
    5 extra vars (-e)                        (always win)
    6 magic names: inventory_hostname, group_names, groups, playbook_dir (not settable)

This is Ansible's order for the levels we have (role defaults < inventory group < inventory host <
host facts < play vars < extra vars); role vars, block/task vars and set_fact do not exist here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from tritonops.inventory.model import Host, Inventory
from tritonops.playbook.model import Play
from tritonops.playbook.templating import Scope

FACTS_WHERE = "host facts"


def host_scope(host: Host, play: Play, inventory: Inventory, *, facts: Mapping[str, Any],
               extra_vars: Mapping[str, Any], playbook_path: str) -> Scope:
    """`host` comes from an inventory loaded with this play's role defaults and the extra vars."""
    winners = {name: settings[-1] for name, settings in host.history.items()}
    values = {name: setting.value for name, setting in winners.items()}
    wheres = {name: setting.where for name, setting in winners.items()}
    raw: dict[str, Any] = {}
    for name, value in facts.items():  # facts are data: never rendered as templates
        values.pop(name, None)
        raw[name] = value
    for name, setting in play.vars.items():
        raw.pop(name, None)
        values[name], wheres[name] = setting.value, setting.where
    for name in extra_vars:
        raw.pop(name, None)
        values[name], wheres[name] = winners[name].value, winners[name].where
    for name, value in magic_vars(host, inventory, playbook_path).items():
        values.pop(name, None)
        raw[name] = value
    return Scope(values, wheres, raw=raw)


def magic_vars(host: Host, inventory: Inventory, playbook_path: str) -> dict[str, Any]:
    return {
        "inventory_hostname": host.name,
        "group_names": sorted(group for group in host.groups if group != "all"),
        "groups": {name: [member.name for member in inventory.hosts_in(name)] for name in inventory.groups},
        "playbook_dir": os.path.dirname(os.path.abspath(playbook_path)),
    }
