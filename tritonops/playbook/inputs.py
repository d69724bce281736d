"""A run's inputs, read once: the playbook and its roles, the inventory, the hosts --limit selects.

pyinfra carries one State through its stages; here `load_run_inputs` is the only place a deploy,
rollback or reading command reads its playbook and inventory files, and every later phase (the
controller's own, compiling the playbook, running it) is handed the result."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tritonops.inventory import load_inventory
from tritonops.inventory.ansible_run import AnsibleOptions
from tritonops.inventory.model import Host, Inventory
from tritonops.inventory.role_defaults import with_role_defaults
from tritonops.playbook.loader import load_playbook
from tritonops.planning.door import balancers_among, serving_hosts
from tritonops.planning.deployment import deployment_of
from tritonops.playbook.model import Play, Playbook


@dataclass(frozen=True, eq=False)
class RunInputs:
    playbook: Playbook
    inventory: Inventory             # every play's role defaults as its lowest layer, provenance kept
    hosts: tuple[Host, ...]          # what --limit selects of it, in inventory order: the hosts that serve
    paths: tuple[str, ...]           # the inventory files and folders as given (-i)
    limit: str | None = None
    extra_vars: Mapping[str, Any] = field(default_factory=dict)
    loaded: Inventory | None = field(default=None, repr=False)  # as read, without role defaults
    balancers: tuple[Host, ...] = ()  # what --limit selects of the group tritonops_balancers: they serve nothing

    @property
    def behind_balancer(self) -> bool:
        """The inventory has balancers, whatever --limit selects: the serving hosts' replicas bind privately
        (planning.bind)."""
        return bool(balancers_among(self.inventory.hosts))

    @property
    def doors(self) -> tuple[Host, ...]:
        """Every balancer of the inventory, whatever --limit selects: a run reaches each of them for the replicas
        it restarts (drain, ready) and the doors it changes, as Ansible's `delegate_to` reaches a host outside
        the play."""
        return tuple(balancers_among(self.inventory.hosts))

    def fleet(self, deployments: Iterable[str] | None = None) -> tuple[Host, ...]:
        """Every serving host of the inventory (of those deployments), whatever --limit selects: a door is
        rendered from all of them, those outside the limit read-only."""
        wanted = None if deployments is None else set(deployments)
        return tuple(host for host in serving_hosts(self.inventory.hosts)
                     if wanted is None or deployment_of(host)[1] in wanted)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(host.name for host in self.hosts)

    def play_inventory(self, play: Play) -> Inventory:
        """The inventory as one play sees it: that play's own role defaults as the lowest layer."""
        return with_role_defaults(self.loaded or self.inventory, play.defaults)


def load_run_inputs(playbook_path: str, inventory_paths: Sequence[str], *, roles_path: Sequence[str] = (),
                    limit: str | None = None, extra_vars: Mapping[str, Any] | None = None,
                    ssh_config_file: str | None = None, ansible: AnsibleOptions | None = None,
                    defaults: Mapping[str, Any] | None = None) -> RunInputs:
    """Every static mistake (playbook, roles, inventory, -e, --limit) raises here, before any host is
    contacted. `defaults`: variables under the inventory's (the command line's connection settings)."""
    playbook = load_playbook(playbook_path, roles_path=roles_path)
    extra_vars = dict(extra_vars or {})
    loaded = load_inventory(list(inventory_paths), ssh_config_file=ssh_config_file, extra_vars=extra_vars,
                            ansible=ansible, defaults=defaults)
    return _run_inputs(playbook, loaded, tuple(inventory_paths), limit, extra_vars)


def run_inputs_of(playbook_path: str, loaded: Inventory, *, roles_path: Sequence[str] = (), limit: str | None = None,
                  extra_vars: Mapping[str, Any] | None = None) -> RunInputs:
    """The same for an inventory made elsewhere (tritonops.api's hosts=: `inventory_of_hosts`, given the same
    `extra_vars`), with no inventory files."""
    return _run_inputs(load_playbook(playbook_path, roles_path=roles_path), loaded, (), limit, dict(extra_vars or {}))


def _run_inputs(playbook: Playbook, loaded: Inventory, paths: tuple[str, ...], limit: str | None,
                extra_vars: dict[str, Any]) -> RunInputs:
    defaults = {name: setting for play in playbook.plays for name, setting in play.defaults.items()}
    inventory = with_role_defaults(loaded, defaults)
    hosts = inventory.select(limit) if limit else inventory.hosts
    return RunInputs(playbook, inventory, tuple(serving_hosts(hosts)), paths, limit, extra_vars, loaded,
                     tuple(balancers_among(hosts)))
