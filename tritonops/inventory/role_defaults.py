"""Role defaults put under an inventory that is already loaded: layer 1 of layers.py, without
reading the inventory files again (a run reads them once; each play brings its own roles' defaults)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from tritonops.inventory.model import Host, Inventory, Setting


def with_role_defaults(inventory: Inventory, defaults: Mapping[str, Setting]) -> Inventory:
    """What `load_inventory(..., defaults=defaults)` gives, from `inventory` loaded without defaults.
    Role defaults never say how a host is reached (roles.py refuses ansible_*), so the connections stay."""
    if not defaults:
        return inventory
    return replace(inventory, hosts=tuple(_host_with(host, defaults) for host in inventory.hosts))


def _host_with(host: Host, defaults: Mapping[str, Setting]) -> Host:
    history = {name: (setting,) for name, setting in defaults.items()}
    for name, settings in host.history.items():
        history[name] = history.get(name, ()) + settings
    return replace(host, vars={name: settings[-1].value for name, settings in history.items()}, history=history)
