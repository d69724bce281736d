"""`tritonops lock status|release`: the lock file read back (the real step program on this machine, a host of
`ansible_connection: local`), the holder named by user@controller or token, a wrong owner refused, a lock that
changed hands left alone, and every release in the audit log."""

import json
import socket
from dataclasses import replace

import pytest
import yaml

from tests.support.cli import cli
from tritonops.cli.main import main
from tritonops.deploy.lock import (LockOwner, LockState, acquire, owner_named, parse_lock_state, read_lock,
                                   release_held)
from tritonops.deploy.lock_admin import forced_owner, left_alone
from tritonops.errors import InputError, TritonopsError
from tritonops.transport.local import LocalTransport

OTHER = LockOwner("0123456789abcdef0123456789abcdef", "carol", "ctl-elsewhere", 4242, "deploy",
                  "2026-12-01T08:00:00Z")


HELD = LockState(True, "carol@ctl-elsewhere", OTHER.token, 4242, "deploy", "2026-12-01T08:00:00Z", 90.0)


def test_the_held_answer_parses_to_the_holder_and_a_foreign_file_to_none():
    held = json.dumps({"held": True, "owner": OTHER.to_json(), "age_s": 90.0})
    assert parse_lock_state(held) == HELD
    assert parse_lock_state(held, stale_after_s=60) == replace(HELD, stale=True)
    assert parse_lock_state('{"held": false}') == LockState(False)
    foreign = json.dumps({"held": True, "owner": '{"user": "x"}', "age_s": 1.0})
    assert parse_lock_state(foreign) == LockState(True, age_s=1.0, text='{"user": "x"}')
    with pytest.raises(TritonopsError, match="cannot read the lock"):
        parse_lock_state("Traceback (most recent call last):")


def test_the_holder_is_named_by_user_at_controller_or_by_its_token_and_by_nothing_else():
    state = HELD
    assert owner_named(state, "carol@ctl-elsewhere") and owner_named(state, OTHER.token)
    assert not owner_named(state, "carol@ctl") and not owner_named(state, "dave@ctl-elsewhere")
    assert not owner_named(state, OTHER.token[:12]) and not owner_named(LockState(False), "carol@ctl-elsewhere")
    assert forced_owner("carol@ctl-elsewhere") == "carol@ctl-elsewhere" and forced_owner(OTHER.token) == OTHER.token
    for bad in ("", "carol", "carol @ctl", "0123abcd"):
        with pytest.raises(InputError, match="--force"):
            forced_owner(bad)


def test_release_leaves_a_free_lock_a_foreign_file_and_anyone_elses_lock_alone():
    assert left_alone(LockState(False), "carol@ctl-elsewhere", "/d/lock") == ("ok", "not locked: nothing to release")
    assert left_alone(LockState(True, text="mine\x1b[2J"), "carol@ctl-elsewhere", "/d/lock") == \
        ("failed", "/d/lock is not a tritonops lock ('mine'): nothing released; remove it by hand if no run holds it")
    assert left_alone(HELD, "dave@ctl", "/d/lock") == \
        ("failed", f"locked by carol@ctl-elsewhere (lock id {OTHER.token}), not dave@ctl: nothing released")
    assert left_alone(HELD, "carol@ctl-elsewhere", "/d/lock") is None and left_alone(HELD, OTHER.token, "/") is None


def test_a_lock_read_on_a_host_and_released_by_its_token_only_while_it_is_the_same_lock(tmp_path):
    host = LocalTransport("here")
    assert read_lock(host, str(tmp_path)) == LockState(False)
    assert acquire(host, str(tmp_path), OTHER).acquired
    found = read_lock(host, str(tmp_path))
    assert replace(found, age_s=90.0) == HELD
    taker = LockOwner.here("rollback")
    assert acquire(host, str(tmp_path), taker, break_lock=True).acquired  # it changed hands after the look
    assert not release_held(host, str(tmp_path), found)
    assert read_lock(host, str(tmp_path)).lock_id == taker.token
    assert release_held(host, str(tmp_path), read_lock(host, str(tmp_path)))
    assert read_lock(host, str(tmp_path)) == LockState(False)


def test_a_lock_left_by_a_gone_run_of_this_controller_is_said_to_be_taken_over(tmp_path):
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()
    left = LockOwner("f" * 32, "me", socket.gethostname(), gone.pid, "deploy", "2026-12-01T08:00:00Z")
    host = LocalTransport("here")
    assert acquire(host, str(tmp_path), left).acquired
    assert read_lock(host, str(tmp_path)).gone


@pytest.fixture
def local_inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"here": {
        "ansible_connection": "local", "tritonops_root": str(tmp_path / "opt"), "tritonops_deployment": "dep-x"}}}}))
    return str(path)


def test_lock_status_and_release_from_the_command_line_with_the_audit_log(capsys, tmp_path, local_inventory):
    root = str(tmp_path / "opt" / "dep-x")
    audit = tmp_path / "audit.log"
    code, free = cli(capsys, "lock", "status", "-i", local_inventory)
    assert code == 0 and free["command"] == "lock status"
    assert (free["results"][0]["msg"], free["results"][0]["payload"]["held"]) == ("free", False)

    assert acquire(LocalTransport("here"), root, OTHER).acquired
    code, held = cli(capsys, "lock", "status", "-i", local_inventory)
    (row,) = held["results"]
    assert code == 0 and row["payload"] == {**vars(replace(HELD, age_s=row["payload"]["age_s"]))}
    assert row["msg"].startswith("held by carol@ctl-elsewhere (pid 4242, deploy since 2026-12-01T08:00:00Z, ")
    assert row["msg"].endswith(f"lock id {OTHER.token}")

    code, refused = cli(capsys, "lock", "release", "-i", local_inventory, "--force", "dave@ctl",
                        "--audit-log", str(audit))
    (row,) = refused["results"]
    assert code == 2 and row["status"] == "failed" and row["task"] == "lock release"
    assert row["msg"] == f"locked by carol@ctl-elsewhere (lock id {OTHER.token}), not dave@ctl: nothing released"
    assert read_lock(LocalTransport("here"), root).lock_id == OTHER.token

    code, released = cli(capsys, "lock", "release", "-i", local_inventory, "--force", "carol@ctl-elsewhere",
                         "--audit-log", str(audit))
    assert code == 0 and released["results"][0]["status"] == "changed"
    assert read_lock(LocalTransport("here"), root) == LockState(False)
    code, again = cli(capsys, "lock", "release", "-i", local_inventory, "--force", OTHER.token, "--audit-log", "none")
    assert code == 0 and again["results"][0]["msg"] == "not locked: nothing to release"
    assert acquire(LocalTransport("here"), root, OTHER).acquired
    code, by_id = cli(capsys, "lock", "release", "-i", local_inventory, "--force", OTHER.token, "--audit-log", "none")
    assert code == 0 and by_id["results"][0]["status"] == "changed"  # the lock id as status shows it
    assert read_lock(LocalTransport("here"), root) == LockState(False)

    docs = [json.loads(line) for line in audit.read_text().splitlines()]
    actions = [(d["tritonops"]["action"], d["tritonops"].get("status")) for d in docs]
    assert actions == [("lock release-started", None), ("phase", "failed"), ("lock release-finished", "failed"),
                       ("lock release-started", None), ("phase", "changed"), ("lock release-finished", "ok")]
    assert {d["host.name"] for d in docs} == {"here"} and {d["labels"]["deployment"] for d in docs} == {"dep-x"}
    assert "not dave@ctl: nothing released" in docs[1]["message"]


def test_lock_release_without_force_or_with_a_malformed_owner_is_bad_input(capsys, local_inventory):
    with pytest.raises(SystemExit) as usage:
        main(["lock", "release", "-i", local_inventory])
    assert usage.value.code == 5
    assert main(["lock", "release", "-i", local_inventory, "--force", "nobody"]) == 5
    assert "--force: OWNER must be user@controller or a lock id" in capsys.readouterr().err


def test_lock_status_as_a_table_names_the_holder(capsys, tmp_path, local_inventory):
    assert acquire(LocalTransport("here"), str(tmp_path / "opt" / "dep-x"), OTHER).acquired
    assert main(["lock", "status", "-i", local_inventory]) == 0
    table = capsys.readouterr().out
    assert all(word in table for word in ("carol@ctl-elsewhere", "deploy (pid 4242)", OTHER.token))
