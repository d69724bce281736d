"""Lab fixtures (`lab`, `lab_ssh`): see tritonops/lab/testing.py. `lab_prometheus`: the test lab's
Prometheus (tritonops/lab/prometheus.py) on 127.0.0.1:9190, under the test lab's state dir. `balancer`: the balancer
lab the front-door files share (tests/support/balancer_lab.py)."""

import os

import pytest

from tritonops.lab.testing import TEST_PROMETHEUS_PORT, lab, lab_lock, lab_ssh  # noqa: F401

LAB_PROMETHEUS_PORT = TEST_PROMETHEUS_PORT


def pytest_collection_modifyitems(items):
    """Every test under tests/lab needs the lab: `-m 'not lab'` leaves them all out. The lab tests come first, their
    units of work for a parallel run the slowest first (tests/support/scheduling.py); a file keeps its own order."""
    from tests.support.scheduling import lab_rank

    here = os.path.dirname(__file__)
    lab_items = []
    for item in items:
        if str(item.fspath).startswith(here + os.sep):
            item.add_marker(pytest.mark.lab)
            lab_items.append(item)
    if lab_items:
        first = sorted(lab_items, key=lambda item: lab_rank(item.nodeid))  # stable: a file keeps its order
        chosen = {id(item) for item in first}
        items[:] = first + [item for item in items if id(item) not in chosen]


@pytest.fixture(autouse=True)
def _one_run_at_a_time(lab_lock):  # noqa: F811
    """Every lab test runs under the test lab's lock, those that start a lab of their own too (issue #46)."""


@pytest.fixture(scope="session")
def lab_prometheus(lab):  # noqa: F811
    from tritonops.lab import prometheus
    from tritonops.lab.containers import network_name

    found = {h.name: prometheus.container_address(h.container, network_name(lab.prefix)) for h in lab.hosts}
    server = prometheus.lab_prometheus(lab.state_dir, LAB_PROMETHEUS_PORT)
    prometheus.up(server, {name: address for name, address in found.items() if address})
    yield server
    if not os.environ.get("TRITONOPS_LAB_KEEP"):
        prometheus.down(server)


@pytest.fixture(scope="session")
def balancer(lab):  # noqa: F811
    from tests.support.balancer_lab import balancer_lab

    yield from balancer_lab(lab)
