"""Lab fixtures (`lab`, `lab_ssh`): see tritonops/lab/testing.py. `lab_prometheus`: the test lab's
Prometheus (tritonops/lab/prometheus.py) on 127.0.0.1:9190, under the test lab's state dir."""

import os

import pytest

from tritonops.lab.testing import TEST_PROMETHEUS_PORT, lab, lab_lock, lab_ssh  # noqa: F401

LAB_PROMETHEUS_PORT = TEST_PROMETHEUS_PORT


def pytest_collection_modifyitems(items):
    """Every test under tests/lab needs the lab: `-m 'not lab'` leaves them all out."""
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here + os.sep):
            item.add_marker(pytest.mark.lab)


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
