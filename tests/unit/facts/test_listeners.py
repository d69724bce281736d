"""facts.listeners: the listening TCP sockets read from the kernel's tables, checked against `ss -Hltn` captured at
the same moment on the same machine (tests/fixtures/proc_net/README.md)."""


import pytest

from tests.support import paths
from tritonops.facts.listeners import Listener, binds, parse_listeners

FIXTURES = paths.FIXTURES / "proc_net"


def said_by_ss(text: str) -> frozenset[Listener]:
    found = set()
    for row in text.splitlines():
        local = row.split()[3]
        address, port = local.rsplit(":", 1)
        address = address.strip("[]")
        found.add(Listener("0.0.0.0" if address == "*" else address, int(port)))
    return frozenset(found)


@pytest.mark.parametrize("prefix", ["", "lab-host-"])
def test_the_tables_list_the_listeners_ss_lists(prefix):
    tables = [(FIXTURES / f"{prefix}{name}").read_text() for name in ("tcp", "tcp6")]
    found = parse_listeners(tables[0]) | parse_listeners(tables[1])
    assert found == said_by_ss((FIXTURES / f"{prefix}ss-ltn.txt").read_text())
    assert found  # each capture has listeners (and the controller's, connections in other states left out)


def test_a_listener_holds_a_port_for_a_server_on_the_same_address_or_a_wildcard_on_either_side():
    sshd = Listener("0.0.0.0", 22)
    assert binds(sshd, "10.0.0.11", 22) and binds(sshd, "0.0.0.0", 22) and not binds(sshd, "0.0.0.0", 8000)
    private = Listener("10.0.0.11", 8000)
    assert binds(private, "10.0.0.11", 8000) and binds(private, "0.0.0.0", 8000)
    assert not binds(private, "10.0.0.12", 8000)  # another address of the host: both can bind
    assert binds(Listener("::", 8000), "10.0.0.11", 8000)


def test_rows_that_are_not_sockets_are_skipped():
    assert parse_listeners("header\n\n   0: nonsense\n   1: 0100007F:ZZZZ 00000000:0000 0A\n") == frozenset()
