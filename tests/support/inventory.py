"""An inventory compared by what it says."""


def shape(inventory):
    """Everything an inventory says, minus where it was said."""
    groups = {name: (group.hosts, set(group.children), set(group.parents), group.vars)
              for name, group in inventory.groups.items()}
    hosts = [(host.name, host.groups, host.vars, host.connection) for host in inventory.hosts]
    return groups, hosts
