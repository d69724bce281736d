"""The parallel run's units of work (tests/support/scheduling.py) match what the lab files set up: a file that
asks for the balancer lab runs with the other front-door files, a file that starts a lab of its own is a unit
alone, the rest share the test lab; every unit named in SLOWEST_FIRST exists. The quiet lock lets a test that
measures speed run alone."""

from __future__ import annotations

import re

from tests.support.paths import TESTS
from tests.support.scheduling import (BALANCER_UNIT, DOOR_FILES, OWN_LAB_FILES, QUIET_FILES, SLOWEST_FIRST,
                                      TEST_LAB_UNIT, lab_rank, next_unit, quiet_held, unit_of)
from tritonops.waiting import wait_until

LAB_FILES = sorted((TESTS / "lab").glob("test_*.py"))


def _asks_for_the_balancer_lab(text: str) -> bool:
    return re.search(r"def \w+\([^)]*\bbalancer\b", text) is not None


def _starts_a_lab_of_its_own(text: str) -> bool:
    """A file with a lab of its own names it at module level, under the worker's prefix (test_lab_prefix)."""
    return re.search(r"^PREFIX = .*test_lab_prefix\(", text, re.M) is not None


def test_each_lab_file_is_in_the_unit_of_what_it_sets_up():
    assert LAB_FILES
    for path in LAB_FILES:
        text, name = path.read_text(), path.stem
        unit = unit_of(f"tests/lab/{path.name}::test_x")
        if name in OWN_LAB_FILES or name in QUIET_FILES:
            assert unit == f"tests/lab/{path.name}"
            if name in OWN_LAB_FILES:
                assert _starts_a_lab_of_its_own(text), f"{name} is a unit of its own but starts no lab of its own"
            else:
                assert _asks_for_the_balancer_lab(text) == (QUIET_FILES[name] == BALANCER_UNIT), name
        elif _starts_a_lab_of_its_own(text):
            raise AssertionError(f"{name} starts a lab of its own: add it to OWN_LAB_FILES")
        elif _asks_for_the_balancer_lab(text):
            assert name in DOOR_FILES, f"{name} asks for the balancer lab: add it to DOOR_FILES"
            assert unit == BALANCER_UNIT
        else:
            assert name not in DOOR_FILES, f"{name} is in DOOR_FILES but never asks for the balancer lab"
            assert unit == TEST_LAB_UNIT, name


def test_the_files_named_exist_and_every_lab_unit_has_its_place_in_the_order():
    names = {path.stem for path in LAB_FILES}
    assert DOOR_FILES <= names and OWN_LAB_FILES <= names
    units = {unit_of(f"tests/lab/{path.name}::t") for path in LAB_FILES}
    assert units == set(SLOWEST_FIRST)
    ranks = [lab_rank(f"tests/lab/{path.name}::t") for path in LAB_FILES]
    assert sorted(set(ranks)) == list(range(len(SLOWEST_FIRST)))
    assert set(QUIET_FILES) <= names


def test_a_quiet_unit_is_given_out_last_to_the_worker_that_ran_its_home_unit():
    bench, image, unit = "tests/lab/test_bench_lab.py", "tests/lab/test_image_lab.py", "tests/unit/test_api.py"
    ran = {BALANCER_UNIT: "gw0", TEST_LAB_UNIT: "gw1"}
    assert next_unit([bench, image, unit], "gw2", ran, ["gw0", "gw1", "gw2"]) == (image, "gw2")
    assert next_unit([bench, unit], "gw0", ran, ["gw0", "gw1", "gw2"]) == (unit, "gw0")
    assert next_unit([bench], "gw2", ran, ["gw0", "gw1", "gw2"]) == (bench, "gw0")  # where its labs are
    assert next_unit([bench], "gw0", ran, ["gw0", "gw1", "gw2"]) == (bench, "gw0")
    assert next_unit([bench], "gw2", ran, ["gw1", "gw2"]) == (bench, "gw2")  # that worker is gone: whoever asks
    assert next_unit([bench], "gw1", {}, ["gw0", "gw1"]) == (bench, "gw1")  # its home never ran


def test_a_unit_test_file_is_its_own_unit_whatever_its_tests_are_called():
    assert unit_of("tests/unit/door/test_runtime.py::test_a[x::y]") == "tests/unit/door/test_runtime.py"
    assert unit_of("tests/unit/door/test_runtime.py::TestC::test_b") == "tests/unit/door/test_runtime.py"
    assert lab_rank("tests/unit/door/test_runtime.py::t") == len(SLOWEST_FIRST)


def gate_taken(path) -> bool:
    import fcntl

    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False


def test_a_quiet_test_waits_for_those_running_and_none_starts_until_it_is_done(tmp_path):
    import threading

    events = []
    running, quiet_waiting, release_first, quiet_in, release_quiet = (threading.Event() for _ in range(5))

    def test(name, quiet, started, release, before=None):
        if before:
            before.wait(10)
        with quiet_held(tmp_path, "run1", quiet):
            events.append(f"{name} in")
            started.set()
            release.wait(10)
            events.append(f"{name} out")

    first = threading.Thread(target=test, args=("first", False, running, release_first))
    first.start()
    assert running.wait(10)
    quiet = threading.Thread(target=test, args=("quiet", True, quiet_in, release_quiet))
    quiet.start()
    assert wait_until(lambda: gate_taken(tmp_path / "tritonops-tests-run1.gate"), timeout_s=10, interval_s=0.01)  # the quiet one holds the gate
    later_in, release_later = threading.Event(), threading.Event()
    later = threading.Thread(target=test, args=("later", False, later_in, release_later, quiet_waiting))
    quiet_waiting.set()
    later.start()
    assert not quiet_in.wait(0.3) and not later_in.wait(0.1)  # the quiet one waits for the first; the later too
    release_first.set()
    assert quiet_in.wait(10)
    assert not later_in.wait(0.3)  # nothing starts beside the quiet one
    release_quiet.set()
    assert later_in.wait(10)
    release_later.set()
    for thread in (first, quiet, later):
        thread.join(10)
    assert events == ["first in", "first out", "quiet in", "quiet out", "later in", "later out"]


def test_tests_that_are_not_quiet_run_together(tmp_path):
    import threading

    inside = threading.Barrier(3, timeout=10)

    def test():
        with quiet_held(tmp_path, "run2", False):
            inside.wait()  # all three at once, or the barrier breaks

    threads = [threading.Thread(target=test) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    assert not inside.broken
