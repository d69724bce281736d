"""Every test: no developer SSH config leaks in; the fuzzers' count at the end; CI's hypothesis profile.
Shared helpers live in tests/support/."""

import os

import pytest


@pytest.fixture(autouse=True)
def _no_user_ssh_config(monkeypatch, tmp_path_factory):
    """The developer's own ~/.ssh/config and known_hosts must never leak into a test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TRITONOPS_SSH_CONFIG", os.devnull)


def pytest_sessionfinish(session):
    """On a worker of a parallel run (pytest-xdist): its fuzz counts go back to the controller, which prints them."""
    from tests.support.fuzzcount import tried

    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["fuzz_tried"] = dict(tried)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item):
    """On a worker of a parallel run, each test (set-up and teardown included, its module's fixtures too) under the
    quiet lock: a test that measures speed runs alone (tests/support/scheduling.py)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run:
        return (yield)
    import tempfile
    from pathlib import Path

    from tests.support.scheduling import is_quiet, quiet_held

    with quiet_held(Path(tempfile.gettempdir()), run, is_quiet(item.nodeid)):
        return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """A parallel run's units of work: tests/support/scheduling.py."""
    from tests.support.scheduling import LabUnitsScheduling

    return LabUnitsScheduling(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    from tests.support.fuzzcount import tried

    tried.update(getattr(node, "workeroutput", {}).get("fuzz_tried", {}))


def pytest_terminal_summary(terminalreporter):
    from tests.support.fuzzcount import tried

    if tried:
        total = sum(tried.values())
        terminalreporter.write_line(f"fuzz examples tried: {total:,} ("
                                    + ", ".join(f"{name} {count:,}" for name, count in sorted(tried.items())) + ")")


def _hypothesis_profiles():
    """CI runs the fuzzers derandomized (the same examples every run, so a red CI is reproducible);
    a developer's run explores new examples each time."""
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI"):
        settings.load_profile("ci")


_hypothesis_profiles()
