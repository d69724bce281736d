"""How a parallel run (./run-tests: pytest-xdist workers) shares the tests out (tests/conftest.py hands xdist this
scheduler): in units of work, each run whole on one worker, given out in collection order (tests/lab/conftest.py
puts the lab files first, the slowest first) to whichever worker is nearly done with its last.

A unit is a test file (its module fixtures set up once), and for the lab, a group of files sharing what a worker
sets up once per session: every front-door file on the one worker that starts the balancer lab, every other file on
the test lab (the session `lab`) on one more. The files whose labs are their own are a unit each. So a run starts
two test labs and one balancer lab, whatever the number of workers, and the machine's two cores are not spent
bringing up the same hosts three times."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from xdist.scheduler import LoadScopeScheduling

LAB = "tests/lab/"
# the files on the balancer lab (tests/support/balancer_lab.py), and those that start a lab of their own; every
# other lab file is on the test lab alone
DOOR_FILES = frozenset({"test_door_lab", "test_door_observability_lab", "test_bench_lab", "test_maintenance_lab",
                        "test_balancer_host_lab"})
OWN_LAB_FILES = frozenset({"test_backend_lab", "test_image_lab", "test_ray_cluster_lab", "test_become_lab"})
# files that measure speed (the lab engine's pace through aiperf, one release against another): each of their tests
# runs alone (`quiet_held`), and they come last in their unit, when the other workers are most likely done
QUIET_FILES = frozenset({"test_bench_lab"})


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the group of lab files it is run with."""
    path = nodeid.split("::", 1)[0]
    if not path.startswith(LAB):
        return path
    name = PurePosixPath(path).stem
    if name in DOOR_FILES:
        return LAB + "(the balancer lab's files)"
    if name in OWN_LAB_FILES:
        return path
    return LAB + "(the test lab's files)"


# The lab's units, the slowest first (minutes in a clean-clone run on 2 cores, one process, set-ups included): the
# long ones begin at once and the short units (the unit-test files) fill the time left over at the end.
SLOWEST_FIRST = (
    LAB + "(the balancer lab's files)",  # 17.7: door 10.9, bench 3.0, maintenance 1.6, door_observability 1.3
    LAB + "(the test lab's files)",  # 11.7 (replicas 2.7, soak_chaos 2.1, serve 1.1 ...)
    LAB + "test_image_lab.py",  # 5.9
    LAB + "test_ray_cluster_lab.py",  # 3.1
    LAB + "test_backend_lab.py",  # 2.1
    LAB + "test_become_lab.py",  # 1.1
)


def lab_rank(nodeid: str) -> tuple[int, bool]:
    """Where a lab test comes in the run: its unit's place (a unit not in SLOWEST_FIRST after those that are), then
    a quiet file after the others of its unit."""
    unit = unit_of(nodeid)
    return (SLOWEST_FIRST.index(unit) if unit in SLOWEST_FIRST else len(SLOWEST_FIRST)), is_quiet(nodeid)


def is_quiet(nodeid: str) -> bool:
    return PurePosixPath(nodeid.split("::", 1)[0]).stem in QUIET_FILES


@contextmanager
def quiet_held(folder: Path, run: str, quiet: bool) -> Iterator[None]:
    """Held around each test of a parallel run (`run`: xdist's test run id): a quiet test runs while no other test
    does, every other test alongside the others. Two flocks: the gate, which a quiet test holds while it waits, so
    that no test starts meanwhile, and the floor, shared by the tests that run, a quiet test's alone."""
    gate = open(folder / f"tritonops-tests-{run}.gate", "a")
    floor = open(folder / f"tritonops-tests-{run}.floor", "a")
    try:
        if quiet:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(floor, fcntl.LOCK_EX)
        else:
            fcntl.flock(gate, fcntl.LOCK_SH)
            fcntl.flock(floor, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield
    finally:
        floor.close()
        gate.close()


class LabUnitsScheduling(LoadScopeScheduling):
    """xdist's scope scheduling, the scopes being `unit_of`."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)
