"""Where the hosts reach each other to pass an image or weights on (relay/run.py), from the inventory: pure.

Variables (see tritonops/inventory/known_vars.py): tritonops_relay_address, tritonops_relay_fanout.
"""

from __future__ import annotations

from tritonops.planning.relay import DEFAULT_FANOUT, RelayPeer, check_fanout
from tritonops.values.ssh_target import host_address, ssh_port, ssh_user


RELAY_ADDRESS_VAR = "tritonops_relay_address"
RELAY_FANOUT_VAR = "tritonops_relay_fanout"


def relay_peer(host) -> RelayPeer:
    """Where the other hosts reach this one's sshd to pass it the image or weights: `tritonops_relay_address`
    ("address" or "address:port", on the hosts' own network; port 22 unless given), else the address and port the
    controller dials. The user is the one the relay's commands run as (the become user, else the login user)."""
    connection = host.connection
    value = host.vars.get(RELAY_ADDRESS_VAR)
    where = _where(host, RELAY_ADDRESS_VAR)
    address, port = connection.host, connection.port or 22
    if value not in (None, ""):
        text = str(value)
        address, port = text, 22  # an address on the hosts' own network: sshd's own port unless it says
        if text.count(":") == 1:  # name:port or v4:port (an IPv6 address has several colons)
            address, port_text = text.split(":")
            port = ssh_port(int(port_text) if port_text.isdigit() else port_text, where)
    # the relay's commands run as the become user where there is one: its authorized_keys is the one written
    return RelayPeer(host.name, host_address(address, where), port,
                     ssh_user(connection.become_user or connection.user or "root", where))


def relay_fanout(hosts) -> int:
    """The most hosts one host passes the image or weights to: the smallest `tritonops_relay_fanout` among `hosts`."""
    chosen = [check_fanout(host.vars[RELAY_FANOUT_VAR], _where(host, RELAY_FANOUT_VAR))
              for host in hosts if host.vars.get(RELAY_FANOUT_VAR) is not None]
    return min(chosen, default=DEFAULT_FANOUT)


def _where(host, name: str) -> str:
    try:
        return host.setting(name).where
    except (KeyError, IndexError, AttributeError):
        return name
