"""Variable precedence as an explicit list of layers, lowest first; a later layer wins.

    1 role defaults                      5 group_vars/<group>   (same group order as 4)
    2 inventory vars of group 'all'      6 inventory host vars
    3 group_vars/all                     7 host_vars/<host>
    4 inventory vars of other groups     8 extra vars (-e)
      (parents before children, then ansible_group_priority, then name)

Every layer is kept, so any value can say where it came from and what it overrode.
Values are replaced whole (Ansible's default hash_behaviour=replace); no Jinja templating.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritonops.inventory.model import Setting


@dataclass(frozen=True)
class Layer:
    label: str
    settings: Mapping[str, Setting]


@dataclass(frozen=True)
class VarSources:
    """Every place a variable can be set, before they are stacked for one host."""

    defaults: Mapping[str, Setting]
    inventory_group_vars: Mapping[str, Mapping[str, Setting]]
    file_group_vars: Mapping[str, Sequence[Mapping[str, Setting]]]  # one mapping per file, in order
    inventory_host_vars: Mapping[str, Mapping[str, Setting]]
    file_host_vars: Mapping[str, Sequence[Mapping[str, Setting]]]
    extra_vars: Mapping[str, Setting]


def host_layers(host: str, groups_in_order: list[str], sources: VarSources) -> list[Layer]:
    """The layers for one host, lowest first; `groups_in_order` excludes 'all'."""
    empty: Mapping[str, Setting] = {}
    layers = [
        Layer("role defaults", sources.defaults),
        Layer("inventory: group all", sources.inventory_group_vars.get("all", empty)),
        *_files("group_vars/all", sources.file_group_vars.get("all", ())),
    ]
    layers += [Layer(f"inventory: group {group}", sources.inventory_group_vars.get(group, empty))
               for group in groups_in_order]
    for group in groups_in_order:
        layers += _files(f"group_vars/{group}", sources.file_group_vars.get(group, ()))
    layers += [
        Layer("inventory: host", sources.inventory_host_vars.get(host, empty)),
        *_files(f"host_vars/{host}", sources.file_host_vars.get(host, ())),
        Layer("extra vars", sources.extra_vars),
    ]
    return layers


def _files(label: str, files: Sequence[Mapping[str, Setting]]) -> list[Layer]:
    return [Layer(label, settings) for settings in files]


def stack(layers: list[Layer]) -> tuple[dict[str, Any], dict[str, tuple[Setting, ...]]]:
    """Resolved values, and for each variable every setting that applied, lowest first."""
    history: dict[str, list[Setting]] = {}
    for layer in layers:
        for name, setting in layer.settings.items():
            history.setdefault(name, []).append(setting)
    values = {name: settings[-1].value for name, settings in history.items()}
    return values, {name: tuple(settings) for name, settings in history.items()}


def group_precedence_key(name: str, depth: int, priority: int) -> tuple[int, int, str]:
    """Ansible's order for group variables: shallower first, then lower priority, then by name."""
    return depth, priority, name
