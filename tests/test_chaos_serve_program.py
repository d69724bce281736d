"""The serve program (tritonops/serving/program.py) after a run that a fault cut off, run for real against a
fake `docker` (a state file) and a fake Triton (HTTP on loopback):
- the run parked the previous container and died before starting its own (connection lost, dockerd gone):
  the next run's release fails its gate, and the release `current` names comes back (it used to be left
  stopped, nothing serving);
- a release's container found running without a passed gate on record (its run was cut off mid-gate,
  Docker restarted it): `current` switches to it only with a passed gate recorded in its release.json
  (it used to switch with only the failed gate there);
- a run cut off leaves its serve program working on the host while the next run takes the lock over: the
  next serve program waits for it (one at a time per deployment), and a gate never passes on a container
  that runs another release than the one it gates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.serve_records import serve_record
from tritonops.planning.bind import local_address
from tritonops.serving import program

FAKE_DOCKER = r'''#!PYTHON
import json, os, sys
path = os.environ["FAKE_DOCKER_STATE"]
state = json.load(open(path))
args = sys.argv[1:]
def save():
    json.dump(state, open(path, "w"))
def labels(c):
    return {"tritonops.release": c["release"], "tritonops.logging": c["logging"]}
cmd = args[0]
if cmd == "inspect":
    name = args[-1]
    c = state.get(name)
    if c is None:
        sys.exit(1)
    if "--format" in args:
        print(1)
    else:
        print(json.dumps([{"State": {"Running": c["running"], "Status": "running" if c["running"] else "exited",
                                     "ExitCode": 0 if c["running"] else 1, "StartedAt": "2026-12-01T00:00:00Z"},
                           "RestartCount": 0, "Image": c["image"], "Config": {"Labels": labels(c)}}]))
elif cmd == "stop":
    state[args[-1]]["running"] = False
elif cmd == "start":
    state[args[-1]]["running"] = True
elif cmd == "rename":
    moved = state.pop(args[1])
    if not os.environ.get("FAKE_DOCKER_LOSES_RENAMED"):
        state[args[2]] = moved
elif cmd == "rm":
    state.pop(args[-1], None)
elif cmd == "run":
    name = args[args.index("--name") + 1]
    release = [a.split("=", 1)[1] for a in args if a.startswith("tritonops.release=")][0]
    fails = release == os.environ.get("FAKE_DOCKER_FAILING_RELEASE") or name == os.environ.get("FAKE_DOCKER_FAILING_NAME")
    release = os.environ.get("FAKE_DOCKER_RUNS_RELEASE") or release  # another run's container under the name
    state[name] = {"running": not fails, "release": release, "image": "img", "logging": "L"}
    import time
    with open(path + ".runs", "a") as runs:
        runs.write("%f\n" % time.time())
    print("cid")
elif cmd == "logs":
    pass
elif cmd == "ps":  # every container here is the deployment's
    print("\n".join(name for name, c in sorted(state.items()) if c["running"]))
save()
'''


class Triton(BaseHTTPRequestHandler):
    def do_GET(self):
        self._answer(b"")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(json.dumps({"text_output": "Paris"}).encode())

    def _answer(self, body):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def host(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Triton)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(FAKE_DOCKER.replace("PYTHON", sys.executable))
    docker.chmod(0o755)
    root = tmp_path / "dep"
    (root / "releases").mkdir(parents=True)

    class Host:
        def __init__(self):
            self.root, self.state = root, tmp_path / "docker.json"

        def release(self, name, gates):
            (root / "releases" / name).mkdir()
            (root / "releases" / name / "release.json").write_text(json.dumps({"release": name, "gates": gates}))

        def gates(self, name):
            return json.loads((root / "releases" / name / "release.json").read_text())["gates"]

        def current(self):
            return os.readlink(root / "current")

        def containers(self, found=None):
            if found is not None:
                self.state.write_text(json.dumps(found))
            return json.loads(self.state.read_text())

        def runs(self):
            return [float(t) for t in Path(str(self.state) + ".runs").read_text().split()]

        def serve(self, release, failing=None, loses_renamed=False, runs_release=None, wait_s=None, replicas=None,
                  failing_name=None, step=None, earlier=None, bind="127.0.0.1", port=None):
            one = [{"name": None, "container": "tritonops-d", "run_argv": [
                        "docker", "run", "-d", "--name", "tritonops-d", "--label", f"tritonops.release={release}", "img"],
                    "fallback_run_argv": ["docker", "run", "-d", "--name", "tritonops-d", "img"],
                    "http_port": port or server.server_address[1], "ports": [], "gpu_processes": []}]
            spec = {"root": str(root), "release": release, "image_id": "img", "replicas": one,
                    "log_driver": "json-file", "log_collector": None, "logging": "L", "logger_path": None,
                    "logger_source": "", "admin_key_file": None,
                    "bind": bind, "address": local_address(bind), "models": ["m"], "deadline_s": 20,
                    **({"wait_s": wait_s} if wait_s else {}),
                    "stop_timeout_s": 1, "prompt": "p",
                    "max_tokens": 2, "predicted_kv_tokens": 100, "kv_patterns": [r"KV (\d+)", r"blocks: (\d+)"],
                    "keep": 5}
            if replicas:  # the same Triton answers for each: the rollout order and what comes back is the point
                spec.update(deployment="d", replicas=[
                    {"name": i, "container": "tritonops-d" if i == 0 else f"tritonops-d-{i}",
                     "run_argv": ["docker", "run", "-d", "--name", "tritonops-d" if i == 0 else f"tritonops-d-{i}",
                                  "--label", f"tritonops.release={release}", "img"],
                     "fallback_run_argv": ["docker", "run", "-d", "img"], "http_port": server.server_address[1],
                     "ports": [], "gpu_processes": []} for i in range(replicas)])
            if step is not None:  # a rollout the controller paces: this replica only (a balancer drained it)
                spec.update(step=step, earlier=earlier or [])
            env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", FAKE_DOCKER_STATE=str(self.state),
                       FAKE_DOCKER_FAILING_RELEASE=failing or "",
                       FAKE_DOCKER_LOSES_RENAMED="1" if loses_renamed else "",
                       FAKE_DOCKER_RUNS_RELEASE=runs_release or "", FAKE_DOCKER_FAILING_NAME=failing_name or "")
            done = subprocess.run([sys.executable, "-c", program.SOURCE], input=json.dumps(spec), env=env,
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout)

    yield Host()
    server.shutdown()


def test_after_a_run_cut_off_between_parking_and_starting_a_failing_release_brings_current_back(host):
    host.release("r1", [{"passed": True}])
    host.release("r2", [])
    os.symlink("releases/r1", host.root / "current")
    # the cut-off run stopped r1's container and parked it, then died before `docker run`
    host.containers({"tritonops-d--r1": {"running": False, "release": "r1", "image": "img", "logging": "L"}})

    outcome = host.serve("r2", failing="r2")

    assert outcome["status"] == "rolled_back" and outcome["previous"] == "r1", outcome
    running = host.containers()["tritonops-d"]
    assert running["running"] and running["release"] == "r1"
    assert host.current() == "releases/r1"


def test_after_a_run_cut_off_a_passing_release_switches_and_keeps_the_previous_parked(host):
    host.release("r1", [{"passed": True}])
    host.release("r2", [])
    os.symlink("releases/r1", host.root / "current")
    host.containers({"tritonops-d--r1": {"running": False, "release": "r1", "image": "img", "logging": "L"}})

    outcome = host.serve("r2")

    assert outcome["status"] == "switched" and outcome["previous"] == "r1", outcome
    assert host.current() == "releases/r2" and host.gates("r2")[-1]["passed"]
    assert set(host.containers()) == {"tritonops-d", "tritonops-d--r1"}


def test_a_release_found_running_without_a_passed_gate_gets_one_on_record_before_current_names_it(host):
    host.release("r1", [{"passed": True}])
    host.release("r2", [{"passed": False, "why": "the container is gone"}])  # its run lost dockerd mid-gate
    os.symlink("releases/r1", host.root / "current")
    host.containers({"tritonops-d": {"running": True, "release": "r2", "image": "img", "logging": "L"}})

    outcome = host.serve("r2")

    assert outcome["status"] == "unchanged", outcome
    assert host.current() == "releases/r2"
    assert host.gates("r2")[-1]["passed"] and host.gates("r2")[-1]["found_running"]


def test_a_release_running_with_a_passed_gate_is_not_recorded_again(host):
    host.release("r2", [{"passed": True}])
    os.symlink("releases/r2", host.root / "current")
    host.containers({"tritonops-d": {"running": True, "release": "r2", "image": "img", "logging": "L"}})

    assert host.serve("r2")["status"] == "unchanged"
    assert host.gates("r2") == [{"passed": True}]


def test_a_failing_release_whose_previous_container_is_gone_says_why_it_did_not_come_back(host):
    from tritonops.operations.serve import serve_verdict

    host.release("r1", [{"passed": True}])
    host.release("r2", [])
    os.symlink("releases/r1", host.root / "current")
    host.containers({"tritonops-d": {"running": True, "release": "r1", "image": "img", "logging": "L"}})

    outcome = host.serve("r2", failing="r2", loses_renamed=True)  # the engine loses the parked container

    assert outcome["status"] == "failed" and outcome["rolled_back"] is False, outcome
    assert "the previous release did not come back either: its container tritonops-d--r1 is gone" in \
        serve_verdict(outcome, 100)
    assert host.current() == "releases/r1"


def test_a_serve_program_waits_for_one_still_running_from_a_run_that_was_cut_off(host):
    import fcntl

    host.release("r1", [])
    host.containers({})
    held = os.open(host.root / ".serve.flock", os.O_WRONLY | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)  # the cut-off run's program, still at work
    freed = {}

    def finish_later():
        time.sleep(2)
        freed["at"] = time.time()
        os.close(held)
    threading.Thread(target=finish_later).start()

    outcome = host.serve("r1")

    assert outcome["status"] == "switched", outcome
    assert host.runs()[0] >= freed["at"]  # nothing started before the other program was done


def test_a_serve_program_gives_up_when_the_other_one_never_ends(host):
    import fcntl

    host.release("r1", [])
    host.containers({})
    held = os.open(host.root / ".serve.flock", os.O_WRONLY | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        started = time.time()
        outcome = host.serve("r1", wait_s=2)
    finally:
        os.close(held)
    assert outcome["status"] == "refused" and "another serve program" in outcome["why"], outcome
    assert 2 <= time.time() - started < 60
    assert not Path(str(host.state) + ".runs").exists()


def test_the_gate_never_passes_on_a_container_running_another_release(host):
    host.release("r1", [{"passed": True}])
    host.release("r2", [])
    os.symlink("releases/r1", host.root / "current")
    host.containers({"tritonops-d": {"running": True, "release": "r1", "image": "img", "logging": "L"}})

    outcome = host.serve("r2", runs_release="r9")  # someone else's container answers under the name

    assert outcome["status"] != "switched" and "runs release r9, not r2" in outcome["why"], outcome
    assert host.current() == "releases/r1"


def _running(release):
    return {"running": True, "release": release, "image": "img", "logging": "L"}


def test_replicas_roll_one_at_a_time_and_current_switches_once_every_one_passed(host):
    host.release("r1", [{"passed": True}])
    host.release("r2", [])
    os.symlink("releases/r1", host.root / "current")
    host.containers({"tritonops-d": _running("r1"), "tritonops-d-1": _running("r1"), "tritonops-d-2": _running("r1")})

    outcome = host.serve("r2", replicas=2)  # 3 -> 2 replicas

    assert outcome["status"] == "switched" and outcome["replicas"] == [
        {"replica": 0, "status": "switched"}, {"replica": 1, "status": "switched"}], outcome
    assert outcome["retired"] == ["tritonops-d-2"]  # the surplus replica, once both served
    found = host.containers()
    assert {n: c["release"] for n, c in found.items() if c["running"]} == {"tritonops-d": "r2", "tritonops-d-1": "r2"}
    assert {"tritonops-d--r1", "tritonops-d-1--r1"} <= set(found)  # the previous ones parked for a rollback
    assert host.current() == "releases/r2"
    assert [g.get("replica") for g in host.gates("r2")] == [0, 1] and all(g["passed"] for g in host.gates("r2"))
    assert len(host.runs()) == 2


def test_a_replica_that_fails_its_gate_brings_the_ones_already_switched_back(host):
    host.release("r1", [{"passed": True}])
    host.release("r2", [])
    os.symlink("releases/r1", host.root / "current")
    host.containers({"tritonops-d": _running("r1"), "tritonops-d-1": _running("r1")})

    outcome = host.serve("r2", replicas=2, failing_name="tritonops-d-1")

    assert outcome["status"] == "rolled_back" and outcome["replica"] == 1, outcome
    assert outcome["replicas_back"] == [{"replica": 0, "back": True, "why": ""}]
    found = host.containers()
    assert {n: c["release"] for n, c in found.items() if c["running"]} == {"tritonops-d": "r1", "tritonops-d-1": "r1"}
    assert "tritonops-d--r2" in found and "tritonops-d-1--r2-failed" in found  # kept aside for a look
    assert host.current() == "releases/r1"


def test_replicas_that_all_run_the_release_are_unchanged_and_a_missing_one_is_started(host):
    host.release("r2", [{"passed": True}])
    os.symlink("releases/r2", host.root / "current")
    host.containers({"tritonops-d": _running("r2")})

    outcome = host.serve("r2", replicas=2)  # 1 -> 2 replicas: replica 0 keeps serving, replica 1 starts

    assert outcome["status"] == "switched" and outcome["replicas"] == [
        {"replica": 0, "status": "unchanged"}, {"replica": 1, "status": "switched"}], outcome
    assert len(host.runs()) == 1
    assert host.serve("r2", replicas=2)["status"] == "unchanged" and len(host.runs()) == 1


def test_a_paced_rollout_serves_one_replica_a_run_and_switches_current_after_the_last(host):
    host.release("r1", [{"passed": True}])
    host.release("r2", [])
    os.symlink("releases/r1", host.root / "current")
    host.containers({"tritonops-d": _running("r1"), "tritonops-d-1": _running("r1")})

    first = host.serve("r2", replicas=2, step=0)
    assert first["status"] == "stepped" and first["step"] == 0 and first["result"]["status"] == "switched"
    found = host.containers()
    assert {n: c["release"] for n, c in found.items() if c["running"]} == {"tritonops-d": "r2", "tritonops-d-1": "r1"}
    assert host.current() == "releases/r1"  # not before every replica passed

    last = host.serve("r2", replicas=2, step=1, earlier=[[0, first["result"]]])
    assert last["status"] == "switched" and last["replicas"] == [
        {"replica": 0, "status": "switched"}, {"replica": 1, "status": "switched"}], last
    assert last["previous"] == "r1" and host.current() == "releases/r2"
    found = host.containers()
    assert {n: c["release"] for n, c in found.items() if c["running"]} == {"tritonops-d": "r2", "tritonops-d-1": "r2"}


def test_a_paced_rollout_whose_last_replica_fails_brings_the_earlier_ones_back(host):
    host.release("r1", [{"passed": True}])
    host.release("r2", [])
    os.symlink("releases/r1", host.root / "current")
    host.containers({"tritonops-d": _running("r1"), "tritonops-d-1": _running("r1")})

    first = host.serve("r2", replicas=2, step=0, failing_name="tritonops-d-1")
    assert first["status"] == "stepped"
    last = host.serve("r2", replicas=2, step=1, earlier=[[0, first["result"]]], failing_name="tritonops-d-1")
    assert last["status"] == "rolled_back" and last["replicas_back"] == [{"replica": 0, "back": True, "why": ""}]
    found = host.containers()
    assert {n: c["release"] for n, c in found.items() if c["running"]} == {"tritonops-d": "r1", "tritonops-d-1": "r1"}
    assert host.current() == "releases/r1"


def test_the_gate_calls_the_replica_at_the_private_address_it_is_bound_to_behind_a_balancer(host):
    # a Triton that answers only on 127.0.0.2 (loopback does not): the gate must ask it there
    private = ThreadingHTTPServer(("127.0.0.2", 0), Triton)
    threading.Thread(target=private.serve_forever, daemon=True).start()
    try:
        host.release("r1", [])
        host.containers({})
        outcome = host.serve("r1", bind="127.0.0.2", port=private.server_address[1])
        assert outcome["status"] == "switched", outcome
        assert host.current() == "releases/r1"
    finally:
        private.shutdown()
        private.server_close()


def test_the_serve_step_tells_the_program_where_the_replicas_answer_on_the_host():
    from tritonops.operations.serve import ContainerSettings, serve_step

    serve = {"models": ["m"], "gpus": [0], "replicas": [{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]}],
             "weights_dirs": [], "deadline_s": 60, "kv_cache_tokens": 0}
    payloads = [serve_step("/opt/tritonops/d", "d", "r1", "img", serve_record(**serve),
                           ContainerSettings(bind_address=bind)).payload
                for bind in ("0.0.0.0", "10.0.0.11")]
    assert [(p["bind"], p["address"]) for p in payloads] == [("0.0.0.0", "127.0.0.1"), ("10.0.0.11", "10.0.0.11")]
    assert "10.0.0.11:8000:8000" in payloads[1]["replicas"][0]["run_argv"]
