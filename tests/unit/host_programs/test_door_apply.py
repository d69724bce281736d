"""The door program (host_programs/door_apply.py) against the real HAProxy of this machine: it starts haproxy
(master-worker, daemon) on the rendered files, leaves it alone when nothing changed, reloads it without cutting a
request in flight, refuses files haproxy -c refuses with the running balancer untouched, and makes an API key file
on first use. Paths are a temporary folder's; the replica is a small HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import os
import stat
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.door_program import Replica, apply, files, place, through  # noqa: F401 - place is a fixture
from tests.support.network import server_port
from tritonops.door import program as door_program
from tritonops.render.door_config import BalancedReplica, BalancerConfig, BalancerGlobals, render_balancer_files


def test_it_starts_haproxy_then_leaves_it_alone_when_nothing_changed(place):
    first = apply(place, files(place))
    assert first.returncode == 0, first.stderr
    answer = json.loads(first.stdout)
    assert answer["action"] == "started" and answer["installed"] is False and answer["version"].startswith("2.")
    assert door_program.read_answer(0, first.stdout, "").changed
    status, body = through(place)
    assert status == 200 and json.loads(body)["port"] == place["replica"]
    again = apply(place, files(place))
    assert json.loads(again.stdout)["action"] == "unchanged"
    assert not door_program.read_answer(0, again.stdout, "").changed
    assert sorted(os.listdir(place["dir"])) == ["00-tritonops.cfg", "10-chat.cfg"]


def test_a_reload_keeps_a_stream_in_flight_whole_and_serves_the_new_configuration(place):
    assert apply(place, files(place)).returncode == 0
    assert through(place)[0] == 200
    got = {}

    def stream():
        req = urllib.request.Request(f"http://127.0.0.1:{place['door']}/v2/models/m/generate_stream",
                                     data=b'{"text_input": "hi"}', headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as reply:
            got["body"] = reply.read().decode()

    reader = threading.Thread(target=stream)
    reader.start()
    time.sleep(0.4)  # the stream has begun
    reloaded = apply(place, files(place, replicas=2))
    reader.join(timeout=10)
    assert reloaded.returncode == 0, reloaded.stderr
    assert json.loads(reloaded.stdout)["action"] == "reloaded"
    assert got["body"].count("data: ") == 5  # every event of the stream begun before the reload
    assert "node-r1" in Path(place["dir"], "10-chat.cfg").read_text()
    assert through(place)[0] == 200


def test_files_haproxy_refuses_change_nothing_and_the_running_balancer_keeps_answering(place):
    assert apply(place, files(place)).returncode == 0
    before = Path(place["dir"], "10-chat.cfg").read_text()
    refused = apply(place, files(place, tls_pem=str(place["tmp"] / "missing.pem")))
    assert refused.returncode == door_program.REFUSED
    assert "haproxy -c refused the new configuration (nothing changed)" in refused.stderr
    assert "missing.pem" in refused.stderr and refused.stderr.count("\n") == 1
    with pytest.raises(door_program.DoorRefused):
        door_program.read_answer(refused.returncode, refused.stdout, refused.stderr)
    assert Path(place["dir"], "10-chat.cfg").read_text() == before
    assert not os.path.exists(place["dir"] + ".next")
    assert through(place)[0] == 200


def test_a_keys_file_is_made_on_first_use_private_and_its_key_opens_the_door(place):
    keys = str(place["tmp"] / "secret" / "keys")
    done = apply(place, files(place, keys_file=keys), keys_files=[keys])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["keys_created"] == [keys]
    key = Path(keys).read_text().strip()
    assert key not in done.stdout + done.stderr and len(key) >= 32
    assert stat.S_IMODE(os.stat(keys).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(keys)).st_mode) == 0o700
    assert through(place, key=key)[0] == 200
    status, body = through(place)
    assert status == 401 and json.loads(body)["reason"] == "unauthorized"
    again = apply(place, files(place, keys_file=keys), keys_files=[keys])
    assert json.loads(again.stdout) == {**json.loads(again.stdout), "action": "unchanged", "keys_created": []}
    assert Path(keys).read_text().strip() == key  # never replaced


@pytest.mark.parametrize("change, said", [
    ({"dir": "relative/dir"}, "dir 'relative/dir' is not an absolute path"),
    ({"files": {"../evil.cfg": "x"}}, "file name '../evil.cfg' is not a .cfg name"),
    ({"files": {"run.sh": "x"}}, "file name 'run.sh' is not a .cfg name"),
])
def test_bad_input_is_refused_in_one_line_before_anything_is_touched(place, change, said):
    done = apply(place, {}, **change)
    assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1
    assert not os.path.exists(place["dir"]) and not os.path.exists(place["pidfile"])


def test_without_haproxy_and_not_allowed_to_install_it_says_so(place):
    done = apply(place, files(place), env={"PATH": str(place["tmp"])})
    assert done.returncode == door_program.NOT_INSTALLED and done.stderr.strip() == "haproxy is not installed"


def test_the_request_names_the_balancers_folders_and_the_answer_reads_back_typed():
    body = json.loads(door_program.request({"10-chat.cfg": "x"}, remove=["10-old.cfg", "10-old.cfg"],
                                           keys_files=["/etc/tritonops/keys"]))
    assert body == {"dir": "/etc/haproxy/tritonops", "files": {"10-chat.cfg": "x"}, "remove": ["10-old.cfg"],
                    "pidfile": "/run/haproxy-tritonops.pid", "socket": "/run/haproxy/tritonops-admin.sock",
                    "install": True, "keys_files": ["/etc/tritonops/keys"]}
    applied = door_program.read_answer(0, '{"action": "unchanged", "installed": true, "keys_created": [], '
                                          '"version": "2.6.12"}', "")
    assert applied == door_program.DoorApplied("unchanged", True, (), "2.6.12") and applied.changed
    with pytest.raises(door_program.TritonopsError, match="haproxy did not start: bind failed"):
        door_program.read_answer(4, "", "haproxy did not start: bind failed\n")


def test_a_key_rotated_in_the_keys_file_reloads_haproxy_and_only_the_new_key_opens(place):
    keys = str(place["tmp"] / "secret" / "keys")
    assert apply(place, files(place, keys_file=keys), keys_files=[keys]).returncode == 0
    old = Path(keys).read_text().strip()
    assert through(place, key=old)[0] == 200
    Path(keys).write_text("a-new-key-of-enough-length-0123456789\n")  # what rotating by hand does
    rotated = apply(place, files(place, keys_file=keys), keys_files=[keys])
    assert json.loads(rotated.stdout)["action"] == "reloaded", rotated.stderr
    assert through(place, key="a-new-key-of-enough-length-0123456789")[0] == 200
    assert through(place, key=old)[0] == 401
    assert json.loads(apply(place, files(place, keys_file=keys), keys_files=[keys]).stdout)["action"] == "unchanged"


def test_a_change_of_maxconn_alone_is_made_on_the_running_worker_without_a_reload(place):
    """A new max_num_seqs changes only the servers' maxconn: set through the stats socket, the files rewritten, the
    worker kept (a reload's old worker may cancel a gRPC stream reaching it as it stops: issue #41's door lab)."""
    import socket

    def ask(command: bytes) -> str:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(place["socket"])
        conn.sendall(command)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
        return data.decode()

    def worker_pid() -> str:
        return next(line.split(":", 1)[1].strip() for line in ask(b"show info\n").splitlines()
                    if line.startswith("Pid:"))

    def stat_rows() -> dict[str, dict[str, str]]:
        lines = ask(b"show stat\n").splitlines()
        header = lines[0].lstrip("# ").split(",")
        return {f"{row[0]}/{row[1]}": dict(zip(header, row)) for row in (line.split(",") for line in lines[1:] if line)}

    assert apply(place, files(place, replicas=2)).returncode == 0
    worker = stat_rows()  # the worker's pid is not in show stat: its servers' limits are
    backend = next(name.split("/")[0] for name in worker if name.endswith("/node-r0"))
    assert worker[f"{backend}/node-r0"]["slim"] == "8"
    pid = worker_pid()
    before = json.loads(apply(place, files(place, replicas=2)).stdout)["action"]
    changed = apply(place, files(place, replicas=2, maxconn=3))
    assert changed.returncode == 0, changed.stderr
    assert (before, json.loads(changed.stdout)["action"]) == ("unchanged", "updated without a reload")
    assert door_program.read_answer(0, changed.stdout, "").changed
    rows = stat_rows()
    assert rows[f"{backend}/node-r0"]["slim"] == rows[f"{backend}/node-r1"]["slim"] == "3"
    assert "maxconn 3" in Path(place["dir"], "10-chat.cfg").read_text()
    assert worker_pid() == pid and through(place)[0] == 200  # the same worker: no reload
    # anything more than maxconn still reloads, and a new worker answers
    assert json.loads(apply(place, files(place, replicas=1, maxconn=3)).stdout)["action"] == "reloaded"
    assert worker_pid() != pid


def test_a_server_moved_to_another_port_is_sent_there_on_the_running_worker_without_a_reload(place):
    """A replica booted on its other slot (issue #42, Kamal's order): the door's file now names its new port. The
    running worker is told (`set server ... addr ... port ...`) and keeps running; requests reach the new port."""
    other = http.server.ThreadingHTTPServer(("127.0.0.1", server_port()), Replica)
    other.daemon_threads = True
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        assert apply(place, files(place)).returncode == 0
        assert json.loads(through(place)[1])["port"] == place["replica"]
        pid = Path(place["pidfile"]).read_text()
        moved = apply(place, files(place, port=other.server_address[1]))
        assert moved.returncode == 0, moved.stderr
        assert json.loads(moved.stdout)["action"] == "updated without a reload"
        assert f"127.0.0.1:{other.server_address[1]}" in Path(place["dir"], "10-chat.cfg").read_text()
        assert {json.loads(through(place)[1])["port"] for _ in range(4)} == {other.server_address[1]}
        assert Path(place["pidfile"]).read_text() == pid
    finally:
        other.shutdown()


def test_a_door_routing_by_prefix_gets_its_lua_script_written_before_haproxy_checks_it(place):
    scripts_dir = place["tmp"] / "etc" / "tritonops-lua"
    script = door_program.PREFIX_KEY
    members = (BalancedReplica("node-r0", "127.0.0.1", place["replica"], place["replica"] + 1, 8),)
    config = BalancerConfig("chat", members, http_port=place["door"], grpc_port=None, check_interval_ms=200,
                            bind_address="127.0.0.1", routing="prefix")
    wanted = render_balancer_files(BalancerGlobals(stats_socket=place["socket"], metrics_port=place["metrics"],
                                                   maxconn=1000, lua_scripts=(f"{scripts_dir}/{script.name}",)),
                                   [config])
    body = json.loads(door_program.request(wanted, scripts=[script]))
    assert body["scripts"] == {script.name: script.text} and body["scripts_dir"] == door_program.SCRIPTS_DIR
    done = apply(place, wanted, scripts_dir=str(scripts_dir), scripts=body["scripts"])
    assert done.returncode == 0, done.stderr
    assert (scripts_dir / script.name).read_text() == script.text
    assert through(place)[0] == 200
    refused = apply(place, wanted, scripts_dir=str(scripts_dir), scripts={"../x.lua": "x"})
    assert refused.returncode == 2 and "script '../x.lua' is not a .lua name" in refused.stderr


def test_a_door_loading_a_lua_script_that_is_not_there_is_refused_and_nothing_changes(place):
    missing = f"{place['tmp']}/nowhere/{door_program.PREFIX_KEY.name}"
    members = (BalancedReplica("node-r0", "127.0.0.1", place["replica"], place["replica"] + 1, 8),)
    config = BalancerConfig("chat", members, http_port=place["door"], grpc_port=None, bind_address="127.0.0.1",
                            routing="prefix")
    wanted = render_balancer_files(BalancerGlobals(stats_socket=place["socket"], metrics_port=place["metrics"],
                                                   lua_scripts=(missing,)), [config])
    done = apply(place, wanted)
    assert done.returncode == door_program.REFUSED and not os.path.exists(place["dir"]), done.stderr
