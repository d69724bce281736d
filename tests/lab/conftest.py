"""Lab fixtures (`lab`, `lab_ssh`): see tritonops/lab/testing.py. `lab_prometheus`: the test lab's
Prometheus (tritonops/lab/prometheus.py) on 127.0.0.1:9190, under the test lab's state dir. `balancer`: the balancer
lab the front-door files share (tests/support/balancer_lab.py)."""

import os

import pytest

from tritonops.lab.testing import TEST_PROMETHEUS_PORT, lab, lab_lock, lab_ssh  # noqa: F401

LAB_PROMETHEUS_PORT = TEST_PROMETHEUS_PORT


# The lab files a parallel run (./run-tests: pytest-xdist, --dist loadgroup) starts first, the slowest first (minutes
# each took in a clean-clone run on 2 cores, set-up included): the long ones begin at once on the workers and the
# unit tests, small units of work, fill the time left over at the end. A file not named here goes after them.
SLOWEST_FIRST = (
    "test_door_lab",  # 10.9
    "test_image_lab",  # 5.9
    "test_ray_cluster_lab",  # 3.1
    "test_bench_lab",  # 3.0
    "test_replicas_lab",  # 2.7
    "test_soak_chaos_lab",  # 2.1
    "test_backend_lab",  # 2.1
    "test_maintenance_lab",  # 1.6
    "test_door_observability_lab",  # 1.3
    "test_serve_lab",  # 1.1
    "test_become_lab",  # 1.1
    "test_bastion_lab",  # 1.0 (the test lab's set-up, where it came first)
)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group marks
def pytest_collection_modifyitems(items):
    """Every test under tests/lab needs the lab: `-m 'not lab'` leaves them all out. Each lab file is one unit of
    work for a parallel run (its module fixtures set up once, on one worker; a worker's session labs, the test lab
    and the balancer lab, shared by the files it runs), and the lab files come first, the slowest first."""
    here = os.path.dirname(__file__)
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    lab_items = []
    for item in items:
        if str(item.fspath).startswith(here + os.sep):
            item.add_marker(pytest.mark.lab)
            name = os.path.splitext(os.path.basename(str(item.fspath)))[0]
            item.add_marker(pytest.mark.xdist_group(name))
            lab_items.append((rank.get(name, len(rank)), item))
    if lab_items:
        first = [item for _, item in sorted(lab_items, key=lambda pair: pair[0])]  # stable: a file's own order kept
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

    try:
        yield from balancer_lab(lab)
    except RuntimeError as err:
        pytest.fail(str(err))
