"""The inventory: Ansible-compatible YAML/INI host lists resolved to variables and connections.

`load_inventory(paths)` reads inventory files (or folders of them) with their group_vars/ and
host_vars/, resolves every host's variables through an explicit list of layers (provenance kept),
and resolves how to reach it as a `ConnectionSpec`. `spec_from_target("user@host:port")` does the
same for a host named on the command line.
"""

from tritonops.inventory.connection import spec_from_target
from tritonops.inventory.loader import inventory_of_hosts, load_inventory
from tritonops.inventory.model import Group, Host, Inventory, Setting

__all__ = ["Group", "Host", "Inventory", "Setting", "inventory_of_hosts", "load_inventory", "spec_from_target"]
