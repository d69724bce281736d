"""Key rotation by the door program (host_programs/door_apply.py, `keys` in its request: what `tritonops door
rotate-key` / `retire-keys` send) against the real HAProxy of this machine: a new key made on the balancer opens
the door after a hitless reload, the old one with it during an overlap (--keep-old) and not after, retiring keeps
only the newest; only key ids come back, never a key; check mode touches nothing."""

from __future__ import annotations

import json
import os
import stat
import threading
import urllib.request
from pathlib import Path

import pytest

from tests.support.door_program import apply, files, place, through  # noqa: F401 - place is a fixture
from tritonops.door import program as door_program


def door(place, keys):
    done = apply(place, files(place, keys_file=keys), keys_files=[keys])
    assert done.returncode == 0, done.stderr
    return Path(keys).read_text().strip()


def rotate(place, keys, action="rotate", keep_old=False, check=False):
    body = json.loads(door_program.keys_request(keys, action, keep_old=keep_old, check=check))
    done = apply(place, body["files"], keys_files=body["keys_files"], keys=body["keys"])
    return done


def key_id(key: str) -> str:
    import hashlib

    return "k:" + hashlib.sha256(key.encode()).hexdigest()[:12]


@pytest.fixture
def keys(place):
    return str(place["tmp"] / "secret" / "chat.keys")


def test_a_rotation_makes_a_new_key_on_the_balancer_and_only_it_opens_after(place, keys):
    old = door(place, keys)
    assert through(place, key=old)[0] == 200
    done = rotate(place, keys)
    assert done.returncode == 0, done.stderr
    answer = door_program.read_answer(0, done.stdout, done.stderr)
    new = Path(keys).read_text().strip()
    assert new != old and len(new) >= 32 and "\n" not in new
    assert answer.action == "reloaded"
    assert answer.keys == door_program.KeysChanged(keys, key_id(new), (), (key_id(old),))
    assert new not in done.stdout + done.stderr and old not in done.stdout + done.stderr
    assert stat.S_IMODE(os.stat(keys).st_mode) == 0o600
    assert through(place, key=new)[0] == 200
    assert through(place, key=old)[0] == 401


def test_with_keep_old_both_keys_open_until_the_old_ones_are_retired(place, keys):
    old = door(place, keys)
    done = rotate(place, keys, keep_old=True)
    assert done.returncode == 0, done.stderr
    new = Path(keys).read_text().split()[0]
    assert Path(keys).read_text().split() == [new, old]  # the newest first
    assert door_program.read_answer(0, done.stdout, "").keys == door_program.KeysChanged(
        keys, key_id(new), (key_id(old),), ())
    assert through(place, key=new)[0] == 200 and through(place, key=old)[0] == 200

    retired = rotate(place, keys, action="retire")
    assert retired.returncode == 0, retired.stderr
    answer = door_program.read_answer(0, retired.stdout, "")
    assert answer.action == "reloaded" and answer.keys == door_program.KeysChanged(
        keys, None, (key_id(new),), (key_id(old),))
    assert Path(keys).read_text().split() == [new]
    assert through(place, key=new)[0] == 200 and through(place, key=old)[0] == 401
    again = rotate(place, keys, action="retire")  # nothing left to retire: haproxy left alone
    assert json.loads(again.stdout)["action"] == "unchanged"


def test_a_rotation_reloads_without_cutting_a_stream_in_flight(place, keys):
    old = door(place, keys)
    got = {}

    def stream():
        request = urllib.request.Request(f"http://127.0.0.1:{place['door']}/v2/models/m/generate_stream",
                                         data=b'{"text_input": "hi"}', headers={
                                             "Content-Type": "application/json", "Authorization": f"Bearer {old}"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            got["body"] = reply.read().decode()

    reader = threading.Thread(target=stream)
    reader.start()
    import time

    time.sleep(0.4)  # the stream has begun, on the old key
    done = rotate(place, keys)
    reader.join(timeout=10)
    assert done.returncode == 0, done.stderr
    assert got["body"].count("data: ") == 5


def test_check_mode_says_what_would_change_and_touches_nothing(place, keys):
    old = door(place, keys)
    before = os.stat(keys)
    done = rotate(place, keys, keep_old=True, check=True)
    assert done.returncode == 0, done.stderr
    answer = door_program.read_answer(0, done.stdout, "")
    assert answer.action == "would reload" and answer.keys == door_program.KeysChanged(keys, None, (key_id(old),), ())
    assert Path(keys).read_text().strip() == old and os.stat(keys).st_mtime_ns == before.st_mtime_ns
    assert json.loads(rotate(place, keys, action="retire", check=True).stdout)["action"] == "unchanged"
    assert through(place, key=old)[0] == 200


def test_a_keys_file_no_door_here_checks_is_refused_and_nothing_is_made(place, keys):
    assert apply(place, files(place)).returncode == 0  # a door without keys
    done = rotate(place, keys)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"no tritonops door on this balancer checks keys from {keys}" in done.stderr
    assert not os.path.exists(keys)


def test_retiring_an_empty_keys_file_is_refused_in_one_line(place, keys):
    door(place, keys)
    Path(keys).write_text("# keys of the chat door\n")
    done = rotate(place, keys, action="retire")
    assert done.returncode == 2 and "holds no key: nothing to keep" in done.stderr


def test_the_rotation_request_keeps_the_deployments_files_and_names_the_keys_file():
    body = json.loads(door_program.keys_request("/etc/tritonops/chat.keys", "rotate", keep_old=True))
    assert body == {"dir": "/etc/haproxy/tritonops", "files": {}, "remove": [], "pidfile": "/run/haproxy-tritonops.pid",
                    "socket": "/run/haproxy/tritonops-admin.sock", "install": False,
                    "keys_files": ["/etc/tritonops/chat.keys"],
                    "keys": {"action": "rotate", "file": "/etc/tritonops/chat.keys", "keep_old": True, "check": False}}
    with pytest.raises(ValueError):
        door_program.keys_request("/etc/tritonops/chat.keys", "drop")


def test_retiring_a_hand_edited_file_keeps_its_comments_and_the_first_key_wherever_it_repeats(place, keys):
    door(place, keys)
    first, second = "a-first-key-of-enough-length-0123456789", "a-second-key-of-enough-length-012345678"
    Path(keys).write_text(f"# the chat door\n{first}\n\n{second}\n{first}\n")
    done = rotate(place, keys, action="retire")
    assert done.returncode == 0, done.stderr
    assert door_program.read_answer(0, done.stdout, "").keys == door_program.KeysChanged(
        keys, None, (key_id(first),), (key_id(second),))
    assert Path(keys).read_text() == f"# the chat door\n{first}\n\n{first}\n"
    assert through(place, key=first)[0] == 200 and through(place, key=second)[0] == 401
