"""SessionPool's preload: modules a run needs once hosts answer are imported in a thread of their own once a
first host is connected, never for a pool that connects nothing, and a module that fails to load there
changes nothing."""

import sys
import time

import pytest

from tritonops.results import HostResult
from tritonops.transport.sessions import SessionPool
from tritonops.transport.spec import ConnectionSpec


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """Three fresh modules on sys.path: one that loads, one that raises, one that records the thread."""
    (tmp_path / "preload_fine.py").write_text("import threading\nLOADED_BY = threading.current_thread().name\n")
    (tmp_path / "preload_broken.py").write_text("raise RuntimeError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in ("preload_fine", "preload_broken"):
        sys.modules.pop(name, None)


def loaded(name: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if name in sys.modules:
            return True
        time.sleep(0.01)
    return False


def test_preloaded_once_a_host_is_connected_in_a_thread_of_its_own(modules):
    with SessionPool([ConnectionSpec("here", "localhost", local=True)], preload=("preload_broken", "preload_fine")) as pool:
        assert "preload_fine" not in sys.modules  # nothing connected yet
        results = pool.run(lambda session: HostResult(session.name, "ok", session.transport.run("echo hi").stdout))
        assert results["here"].msg == "hi\n"
        assert loaded("preload_fine")
    assert sys.modules["preload_fine"].LOADED_BY == "preload"
    assert "preload_broken" not in sys.modules  # failed there, quietly: whoever imports it sees the error


def test_a_pool_that_connects_nothing_loads_nothing(modules):
    unreachable = ConnectionSpec("ghost", "127.0.0.1", port=1, connect_timeout_s=2)
    with SessionPool([unreachable], preload=("preload_fine",)) as pool:
        assert pool.run(lambda session: HostResult(session.name, "ok"))["ghost"].status == "unreachable"
    assert not loaded("preload_fine", within=0.3)
