"""How a parallel run (./run-tests: pytest-xdist workers) shares the tests out (tests/conftest.py hands xdist this
scheduler): in units of work, each run whole on one worker, given out in collection order (tests/lab/conftest.py
puts the lab files first, the slowest first) to whichever worker is nearly done with its last.

A unit is a test file (its module fixtures set up once), and for the lab, a group of files sharing what a worker
sets up once per session: every front-door file on the one worker that starts the balancer lab, every other file on
the test lab (the session `lab`) on one more. The files whose labs are their own are a unit each. So a run starts
two test labs and one balancer lab, whatever the number of workers, and the machine's two cores are not spent
bringing up the same hosts three times.

A file that measures speed (QUIET_FILES: the bench's figures against the lab engine's pace, one release's against
another's) is a unit of its own, kept for the end and given to the worker that ran its home unit (whose labs it
uses); each of its tests runs alone (`quiet_held`): it waits for the tests running on the other workers, and none
starts until it is done."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from xdist.scheduler import LoadScopeScheduling

LAB = "tests/lab/"
BALANCER_UNIT = LAB + "(the balancer lab's files)"
TEST_LAB_UNIT = LAB + "(the test lab's files)"
# the files on the balancer lab (tests/support/balancer_lab.py), and those that start a lab of their own; every
# other lab file is on the test lab alone
DOOR_FILES = frozenset({"test_door_lab", "test_door_observability_lab", "test_bench_lab", "test_maintenance_lab",
                        "test_balancer_host_lab"})
OWN_LAB_FILES = frozenset({"test_backend_lab", "test_image_lab", "test_ray_cluster_lab", "test_become_lab"})
# the files that measure speed, each with the unit whose labs it uses (its home)
QUIET_FILES = {"test_bench_lab": BALANCER_UNIT}


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the group of lab files it is run with."""
    path = nodeid.split("::", 1)[0]
    if not path.startswith(LAB):
        return path
    name = PurePosixPath(path).stem
    if name in OWN_LAB_FILES or name in QUIET_FILES:
        return path
    if name in DOOR_FILES:
        return BALANCER_UNIT
    return TEST_LAB_UNIT


def is_quiet(nodeid: str) -> bool:
    return PurePosixPath(nodeid.split("::", 1)[0]).stem in QUIET_FILES


def home_of(unit: str) -> str | None:
    """The unit whose labs a quiet unit uses; None for any other unit."""
    return QUIET_FILES.get(PurePosixPath(unit).stem) if unit.startswith(LAB) else None


# The lab's units, the slowest first (minutes in a clean-clone run on 2 cores, one process, set-ups included): the
# long ones begin at once and the short units (the unit-test files) fill the time left over at the end.
SLOWEST_FIRST = (
    BALANCER_UNIT,  # 14.7: door 10.9, maintenance 1.6, door_observability 1.3
    TEST_LAB_UNIT,  # 11.7 (replicas 2.7, soak_chaos 2.1, serve 1.1 ...)
    LAB + "test_image_lab.py",  # 5.9
    LAB + "test_ray_cluster_lab.py",  # 3.1
    LAB + "test_backend_lab.py",  # 2.1
    LAB + "test_become_lab.py",  # 1.1
    LAB + "test_bench_lab.py",  # 3.0, quiet: given out last whatever its place here
)


def lab_rank(nodeid: str) -> int:
    """Where a lab test's unit comes in the run (a unit not in SLOWEST_FIRST after those that are)."""
    unit = unit_of(nodeid)
    return SLOWEST_FIRST.index(unit) if unit in SLOWEST_FIRST else len(SLOWEST_FIRST)


def next_unit(queue: Sequence[str], asking: str, ran: dict[str, str], alive: Sequence[str]) -> tuple[str, str]:
    """(the unit to give out next, the worker to give it to) when worker `asking` is nearly done: the first unit of
    the queue that is not quiet; when only quiet ones are left, the first, to the worker that ran its home unit
    (`ran`: unit -> worker) while that worker is `alive`, else to `asking`."""
    for unit in queue:
        if home_of(unit) is None:
            return unit, asking
    unit = queue[0]
    home = ran.get(home_of(unit) or "")
    return unit, home if home in alive else asking


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
    """xdist's scope scheduling, the scopes being `unit_of`, the next unit chosen by `next_unit`."""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        self.ran: dict[str, object] = {}  # unit -> the worker (node) it was given to

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def _assign_work_unit(self, node) -> None:
        workers = {str(id(n)): n for n in self.nodes if not n.shutting_down}
        ran = {unit: str(id(n)) for unit, n in self.ran.items()}
        unit, chosen = next_unit(list(self.workqueue), str(id(node)), ran, list(workers))
        node = workers.get(chosen, node)
        self.workqueue.move_to_end(unit, last=False)  # the base class gives out the queue's first unit
        self.ran[unit] = node
        super()._assign_work_unit(node)
