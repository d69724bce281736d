"""The host lock on a real (local) host: one holder, refusals name the owner, stale and broken locks."""

import json
import os

from tritonops.deploy.lock import LockOwner, acquire, refusal, release
from tritonops.transport.local import LocalTransport


def test_one_holder_at_a_time_and_the_refusal_names_the_owner(tmp_path):
    host = LocalTransport("gpu1")
    first, second = LockOwner.here("deploy"), LockOwner.here("rollback")
    assert acquire(host, str(tmp_path), first).acquired
    refused = acquire(host, str(tmp_path), second)
    assert not refused.acquired
    assert f"pid {os.getpid()}, deploy since {first.since}" in refused.held_by
    assert "--break-lock" in refusal("gpu1", refused) and "gpu1" in refusal("gpu1", refused)
    assert oct(os.stat(tmp_path / "lock").st_mode & 0o777) == "0o600"


def test_only_the_holder_releases(tmp_path):
    host = LocalTransport()
    holder, other = LockOwner.here("deploy"), LockOwner.here("deploy")
    assert acquire(host, str(tmp_path), holder).acquired
    release(host, str(tmp_path), other)
    assert (tmp_path / "lock").exists()
    release(host, str(tmp_path), holder)
    assert not (tmp_path / "lock").exists()
    assert acquire(host, str(tmp_path), other).acquired


def test_a_stale_lock_is_taken_over_and_break_lock_takes_any(tmp_path):
    host = LocalTransport()
    old = LockOwner.here("deploy")
    assert acquire(host, str(tmp_path), old).acquired
    os.utime(tmp_path / "lock", (0, 0))  # written in 1970: long stale
    taken = acquire(host, str(tmp_path), LockOwner.here("deploy"), stale_after_s=3600)
    assert taken.acquired and old.user in taken.held_by
    fresh = LockOwner.here("deploy")
    assert not acquire(host, str(tmp_path), fresh).acquired
    broken = acquire(host, str(tmp_path), fresh, break_lock=True)
    assert broken.acquired
    assert json.loads((tmp_path / "lock").read_text())["token"] == fresh.token


def test_a_garbled_lock_file_is_shown_not_crashed_on(tmp_path):
    (tmp_path / "lock").write_text("not json")
    refused = acquire(LocalTransport(), str(tmp_path), LockOwner.here("deploy"))
    assert not refused.acquired and "not json" in refused.held_by


def test_a_lock_left_by_a_gone_run_of_this_controller_is_taken_over(tmp_path):
    import socket
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()  # a pid that no longer runs
    host = LocalTransport()
    left = LockOwner("t", "me", socket.gethostname(), gone.pid, "deploy", "2026-12-01T08:00:00Z")
    assert acquire(host, str(tmp_path), left).acquired
    taken = acquire(host, str(tmp_path), LockOwner.here("deploy"))
    assert taken.acquired and f"pid {gone.pid}" in taken.held_by
    elsewhere = LockOwner("t2", "me", "another-controller", gone.pid, "deploy", "2026-12-01T08:00:00Z")
    (tmp_path / "lock").unlink()
    assert acquire(host, str(tmp_path), elsewhere).acquired
    assert not acquire(host, str(tmp_path), LockOwner.here("deploy")).acquired  # another machine's run: refused
