"""pytest fixtures for tests that need real lab hosts (import them into a conftest.py).

    from tritonops.lab.testing import lab, lab_ssh  # noqa: F401

`lab` (session): a LabState with one full host (2080ti), one light h200x2 host, one light
host without a driver and a bastion (the inventory still reaches the hosts directly; tests go
through the bastion with `lab.connection_behind(host, BASTION)`), under its own state dir,
name prefix and ports, torn down at the end
(set TRITONOPS_LAB_KEEP=1 to keep it for the next run: a second `up` takes seconds; TRITONOPS_LAB_TEST_STATE,
TRITONOPS_LAB_TEST_PREFIX and TRITONOPS_LAB_TEST_PORT_BASE put it beside another lab on the same engine).
`lab_ssh(host, command)` runs a shell command on a lab host over real SSH.
`lab_hub(state, hosts, repos, token)`: the lab's hub stand-in on the lab network's gateway, its
client installed on the given hosts (a context manager).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tritonops.lab import api
from tritonops.lab.request import HostSpec, LabRequest


def worker_index(worker: str | None) -> int:
    """Which of pytest-xdist's workers this process is (its PYTEST_XDIST_WORKER, `gw0`, `gw1`...): 0 without xdist.
    Each worker runs its lab test files beside the others' on one engine, in labs of its own (name prefix, ports,
    state dir)."""
    if worker and worker.startswith("gw") and worker[2:].isdigit():
        return int(worker[2:])
    return 0


WORKER = worker_index(os.environ.get("PYTEST_XDIST_WORKER"))
# another name prefix and port base (a second lab beside the suite's on one engine): these variables; worker N of
# a run over several (./run-tests -n N) adds -wN to the prefix and N x 1000 to the ports
TEST_PREFIX = (os.environ.get("TRITONOPS_LAB_TEST_PREFIX", "tritonops-labtest")
               + (f"-w{WORKER}" if WORKER else ""))
TEST_PORT_BASE = int(os.environ.get("TRITONOPS_LAB_TEST_PORT_BASE", "22300")) + 1000 * WORKER
# the test lab's Prometheus on this machine (tests/lab/conftest.py)
TEST_PROMETHEUS_PORT = int(os.environ.get("TRITONOPS_LAB_TEST_PROMETHEUS_PORT", "9190")) + WORKER


def test_lab_prefix(name: str) -> str:
    """The name prefix of a lab a test file starts beside the test lab: under the test lab's own prefix, so that a
    second run of the suite (a helper's, another checkout's) given another TRITONOPS_LAB_TEST_PREFIX shares no
    container, volume or network with this one."""
    return f"{TEST_PREFIX}-{name}"


def test_lab_port_base(offset: int) -> int:
    """The SSH port base of such a lab: the test lab's base plus the file's own offset."""
    return TEST_PORT_BASE + offset


# helpers, not tests: pytest would otherwise collect them (as tests asking for a fixture `name`) in every test file
# that imports them
test_lab_prefix.__test__ = False  # type: ignore[attr-defined]
test_lab_port_base.__test__ = False  # type: ignore[attr-defined]


FULL_2080TI = "t-full-2080ti"
LIGHT_H200X2 = "t-light-h200x2"
LIGHT_NOGPU = "t-light-nogpu"
BASTION = "t-bastion"
TEST_REQUEST = LabRequest((
    HostSpec(FULL_2080TI, "2080ti", "full"),
    HostSpec(LIGHT_H200X2, "h200x2", "light"),
    HostSpec(LIGHT_NOGPU, "nogpu", "light"),
    HostSpec(BASTION, "nogpu", "bastion"),  # the others are reachable through it too (tests/lab/test_bastion_lab.py)
))


def lab_test_state_dir() -> Path:
    return Path(os.environ.get("TRITONOPS_LAB_TEST_STATE", Path(tempfile.gettempdir()) / TEST_PREFIX))


class LabBusy(RuntimeError):
    """Another run of the lab tests holds the test lab (its name prefix): this one would remove its containers."""


def lab_lock_path(prefix: str = TEST_PREFIX) -> Path:
    return Path(tempfile.gettempdir()) / f"{prefix}.lock"


@contextmanager
def held_lab_lock(path: Path) -> Iterator[None]:
    """The test lab's lock (an flock, gone with the process that holds it), taken at once or LabBusy naming the
    holder: two runs of the suite with one name prefix would start, reuse and tear down each other's containers."""
    handle = open(path, "a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            raise LabBusy(f"another run of the lab tests (pid {holder}) holds {path}: wait for it, or give this run "
                          "its own TRITONOPS_LAB_TEST_PREFIX and TRITONOPS_LAB_TEST_PORT_BASE") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()


@pytest.fixture(scope="session")
def lab_lock():
    """Held for the whole run of the lab tests (tests/lab/conftest.py uses it for every lab test)."""
    try:
        with held_lab_lock(lab_lock_path()):
            yield
    except LabBusy as err:
        pytest.exit(str(err), returncode=3)


@pytest.fixture(scope="session")
def lab(lab_lock):
    state_dir = lab_test_state_dir()
    state = api.up(TEST_REQUEST, state_dir=state_dir, name_prefix=TEST_PREFIX, port_base=TEST_PORT_BASE)
    if state.results.failed:
        pytest.fail("lab up failed: " + "; ".join(f"{r.host}: {r.msg}" for r in state.results.failed))
    yield state
    if not os.environ.get("TRITONOPS_LAB_KEEP"):
        api.down(state_dir=state_dir, name_prefix=TEST_PREFIX)


@pytest.fixture
def lab_ssh(lab):
    def run(host: str, command: str, timeout: float = 120.0, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(lab.ssh_argv(host, command), capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"{host}: '{command}' exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
        return proc

    return run


def lab_gateway(state) -> str:
    """This machine's address on the lab's network (where a lab host reaches a server run here)."""
    import docker

    network = docker.from_env().networks.get(f"{state.prefix}-net")
    return network.attrs["IPAM"]["Config"][0]["Gateway"]


@contextmanager
def lab_hub(state, hosts, repos: dict, token: str | None = None):
    """The hub stand-in serving `repos` on the lab gateway, huggingface_hub installed on `hosts`."""
    from tritonops.lab.hub import HubServer
    from tritonops.lab.defaults import default_cache_dir
    from tritonops.lab.wheelhouse.hub_wheels import hub_wheels, install_on_host
    from tritonops.transport.pool import open_transport

    wheels = hub_wheels(default_cache_dir())
    for name in hosts:
        transport = open_transport(state.connection(name))
        try:
            install_on_host(transport, wheels)
        finally:
            transport.close()
    with HubServer(repos, host=lab_gateway(state), token=token) as server:
        yield server
