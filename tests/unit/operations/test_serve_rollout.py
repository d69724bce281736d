"""The rollout from the controller (operations/serve_rollout.py, issue #42): what the serve task plans from the
host's facts (operations.serve.rollout_plan, serving.rollout_facts) and the pure parts of carrying it out. The
steps themselves run on real hosts in the lab (tests/lab/test_serve_lab.py, test_replicas_lab.py, the door's)."""

import json
import subprocess
import sys

import pytest

from tests.support.rollout_plans import on_standby
from tests.support.serve_records import serve_record
from tritonops import host_programs
from tritonops.errors import TritonopsError
from tritonops.operations.serve import rollout_plan
from tritonops.operations.serve_rollout import GateAnswer, logging_driver_failed, reported_kv_tokens
from tritonops.serving.replica_rollout import ContainerFact, HostFacts
from tritonops.serving.rollout_facts import gpu_holders_query, parse_containers, parse_holders

TWO = [{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]}, {"index": 1, "gpus": [1], "ports": [8010, 8011, 8012]}]


def test_a_replica_found_running_the_release_is_gated_again_and_restarts_stop_first_should_it_not_answer():
    record = serve_record(replicas=TWO)
    host = HostFacts({"tritonops-d": ContainerFact("r2", True), "tritonops-d-1": ContainerFact("r1", True)},
                     current="r1", passed=frozenset({"r1"}), serving=serve_record(replicas=TWO))
    plan, restarts = rollout_plan("d", "r2", record, host)
    assert [(r.index, r.order) for r in plan.replicas] == [(0, "unchanged"), (1, "stop-first")]
    assert set(restarts) == {0}  # only the unchanged one has a restart plan beside it
    again = restarts[0]
    assert again.order == "stop-first" and again.previous == "r2" and again.undo == ()  # the same release parked
    assert [s.said() for s in again.steps] == ["drain tritonops-d", "stop tritonops-d",
                                               "rename tritonops-d tritonops-d--r2", "run tritonops-d r2",
                                               "gate tritonops-d r2", "ready tritonops-d"]


def test_nothing_found_running_as_asked_has_no_restart_plan():
    plan, restarts = rollout_plan("d", "r2", serve_record(replicas=TWO), HostFacts({}))
    assert [r.order for r in plan.replicas] == ["stop-first", "stop-first"] and restarts == {}


def test_the_containers_listing_reads_which_run_as_asked():
    listing = json.dumps({"tritonops-d": {"release": "r1", "running": True, "image": "sha256:a", "logging": "L",
                                          "restarts": 0},
                          "tritonops-d-1": {"release": "r1", "running": True, "image": "sha256:b", "logging": "L",
                                            "restarts": 0},
                          "tritonops-d--r0": {"release": "r0", "running": False, "image": "sha256:a", "logging": "L",
                                              "restarts": 0}})
    assert parse_containers(listing, "sha256:a", "L") == {"tritonops-d": ContainerFact("r1", True, True),
                                                          "tritonops-d-1": ContainerFact("r1", True, False),
                                                          "tritonops-d--r0": ContainerFact("r0", False, True)}
    with pytest.raises(TritonopsError, match="the deployment's containers could not be read"):
        parse_containers("docker: not found", "sha256:a", "L")


def test_the_gpu_holders_program_keeps_live_processes_that_are_none_of_the_deployments():
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout.strip()
        processes = [{"gpu": 0, "pid": live.pid, "bytes": 3 << 29}, {"gpu": 1, "pid": int(gone), "bytes": 1 << 30}]
        query = gpu_holders_query(processes, "no-such-deployment-here")
        done = subprocess.run((sys.executable, *query.argv[1:]), capture_output=True, text=True, timeout=60)
    finally:
        live.kill()
    assert done.returncode == 0, done.stderr
    assert parse_holders(done.stdout) == {0: f"pid {live.pid} (1.5 GiB)"}  # the ended one holds nothing


def test_the_gpu_holders_query_is_the_packed_program_with_its_input_as_arguments():
    query = gpu_holders_query([{"gpu": 1, "pid": 42, "bytes": 7}], "d")
    assert query.argv == ("python3", "-c", host_programs.source("gpu_holders"),
                          '[{"bytes": 7, "gpu": 1, "pid": 42}]', "d")


def test_the_gate_answer_and_vllms_kv_line():
    answer = GateAnswer.from_json(json.dumps({"passed": False, "why": "not ready within 5 s (waiting for live)",
                                              "ready_s": None, "models_ready_at": None, "answers": None,
                                              "log": ["INFO GPU KV cache size: 12,345 tokens"]}))
    assert answer == GateAnswer(False, "not ready within 5 s (waiting for live)",
                                log=("INFO GPU KV cache size: 12,345 tokens",))
    assert reported_kv_tokens(answer.log) == 12345
    assert reported_kv_tokens(["# GPU blocks: 100, # CPU blocks: 0"]) == 1600
    assert reported_kv_tokens(["nothing"]) is None


def test_a_log_driver_that_cannot_start_is_told_apart_from_other_run_failures():
    assert logging_driver_failed("docker: Error response from daemon: failed to initialize logging driver: dial tcp")
    assert not logging_driver_failed("docker: Error response from daemon: Conflict. The container name is in use")


def test_a_replica_booted_on_its_standby_slot_runs_there_beside_the_old_one_and_release_json_says_so():
    # Kamal's order (issue #42): the old replica serves on GPU 0 at 8000-8002; the new one boots as
    # tritonops-d--r2 on its standby slot (GPU 1, 8010-8012), the gate asks it there, and the release's record is
    # rewritten to say where it runs (its slots swapped)
    from tritonops.operations.serve import ContainerSettings, serve_step

    spare = [{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002], "standby": {"gpus": [1],
                                                                                  "ports": [8010, 8011, 8012]}}]
    record = serve_record(replicas=spare)
    host = HostFacts({"tritonops-d": ContainerFact("r1", True, ports=(8000, 8001, 8002))}, current="r1",
                     passed=frozenset({"r1"}), serving=record)
    plan, _ = rollout_plan("d", "r2", record, host)
    assert on_standby(plan) == (0,) and plan.replicas[0].order == "boot-first"
    step = serve_step("/opt/tritonops/d", "d", "r2", "img", record, ContainerSettings(), plan)
    launch = step.rollout.launches[0]
    argv = launch.run_argv("tritonops-d--r2")
    assert argv[argv.index("--name") + 1] == "tritonops-d--r2" and argv[argv.index("--gpus") + 1] == '"device=1"'
    assert [argv[at + 1] for at, arg in enumerate(argv) if arg == "--publish"] == [
        "0.0.0.0:8010:8000", "0.0.0.0:8011:8001", "0.0.0.0:8012:8002"]
    assert launch.run_argv()[launch.run_argv().index("--name") + 1] == "tritonops-d"
    assert launch.endpoints() == {"http": 8010, "grpc": 8011, "metrics": 8012}
    assert launch.endpoints((8000, 8001, 8002))["http"] == 8000 and launch.door_ports((8010, 8011, 8012)) == (8010, 8011)
    written = step.rollout.prepare["serve"]["replicas"][0]
    assert (written["gpus"], written["ports"], written["standby"]) == (
        [1], [8010, 8011, 8012], {"gpus": [0], "ports": [8000, 8001, 8002]})
    # the old one published the standby slot's ports: it runs there, so the next release boots back on the first
    running = HostFacts({"tritonops-d": ContainerFact("r2", True, ports=(8010, 8011, 8012))}, current="r2",
                        passed=frozenset({"r2"}), serving=record.with_replica(record.replicas[0].swapped()))
    back, _ = rollout_plan("d", "r3", record, running)
    assert on_standby(back) == () and back.replicas[0].steps[2].said() == "ready tritonops-d--r3 at 8000/8001/8002"
    # where it runs is said either way: a release rolled back to may run on the other slot than it did before
    assert serve_step("/opt/tritonops/d", "d", "r3", "img", record, ContainerSettings(),
                      back).rollout.prepare["serve"]["replicas"][0]["ports"] == [8000, 8001, 8002]


def test_the_containers_listing_reads_the_ports_each_publishes():
    listing = json.dumps({"tritonops-d": {"release": "r1", "running": True, "image": "sha256:a", "logging": "L",
                                          "restarts": 0, "ports": [8010, 8011, 8012]},
                          "tritonops-d--r0": {"release": "r0", "running": False, "image": "sha256:a", "logging": "L",
                                              "restarts": 0}})
    found = parse_containers(listing, "sha256:a", "L")
    assert found["tritonops-d"].ports == (8010, 8011, 8012) and found["tritonops-d--r0"].ports == ()


def test_a_port_of_a_standby_slot_another_process_binds_is_held_and_the_replica_stops_first():
    # the kernel's socket table: a process outside the deployment listens on 8010 (the standby slot's HTTP port)
    from tritonops.operations.serve import _held_ports

    spare = [{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002], "standby": {"gpus": [1],
                                                                                  "ports": [8010, 8011, 8012]}}]
    record = serve_record(replicas=spare)
    table = ("  sl  local_address rem_address   st\n"
             "   0: 00000000:1F4A 00000000:0000 0A\n"   # 0.0.0.0:8010, listening
             "   1: 00000000:1F40 00000000:0000 0A\n")  # 0.0.0.0:8000: the running replica's own
    held = _held_ports(record, "d", "0.0.0.0", [table], record, ["tritonops-d"])
    assert held == frozenset({8010})
    plan, _ = rollout_plan("d", "r2", record, HostFacts({"tritonops-d": ContainerFact("r1", True)}, current="r1",
                                                        passed=frozenset({"r1"}), held_ports=held, serving=record))
    assert plan.replicas[0].order == "stop-first" and on_standby(plan) == ()
