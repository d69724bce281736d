"""status: Triton's metrics text per model, and a host's status from its facts. Pure."""

from datetime import datetime, timezone

from tests.support.serve_records import HOST_PORTS, serve_record
from tritonops.planning.serve_record import ReplicaRecord
from tritonops.serving.releases import Deployed, ReleaseRecord, parse_releases, rollback_target
from tritonops.serving.status import ModelMetrics, host_status, parse_metrics

import json

import pytest

from tritonops.errors import TritonopsError

METRICS = """# HELP nv_inference_request_success Number of successful inference requests
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="chat",version="1"} 3
nv_inference_request_success{model="chat",version="2"} 1
nv_inference_request_failure{model="chat",version="1"} 2
nv_inference_count{model="chat",version="1"} 3
nv_inference_request_duration_us{model="chat",version="1"} 3000000
nv_inference_request_duration_us{model="chat",version="2"} 1000000
nv_inference_queue_duration_us{model="chat",version="1"} 4000
nv_inference_compute_infer_duration_us{model="chat",version="1"} 2000000
nv_inference_request_success{model="idle",version="1"} 0
vllm:prompt_tokens_total{model="chat",version="1"} 42
"""


def test_metrics_are_summed_over_versions_and_averaged_per_request():
    assert parse_metrics(METRICS) == {
        "chat": ModelMetrics(4, 2, {"request": 1000.0, "queue": 1.0, "compute_infer": 500.0}),
        "idle": ModelMetrics(0, 0, {}),
    }


def deployed(**container):
    release = ReleaseRecord("20261201T080000Z-aaaa1111", "20261201T080000Z", "sha256:x", serve_record(models=["chat"]),
                            ("chat",), ({"passed": True, "kv_cache_tokens": {"predicted": 1000, "reported": 1040}},))
    return Deployed((release,), release.id, container or None)


def test_a_serving_host():
    found = host_status("gpu1", deployed(status="running", running=True, restarts=2,
                                         started_at="2026-12-01T08:00:00.123456789Z"),
                        {"live": True, "ready": True, "models": {"chat": True}, "metrics": METRICS},
                        datetime(2026, 12, 1, 9, 0, 0, tzinfo=timezone.utc))
    assert (found.current, found.container, found.restarts, found.ready) == ("20261201T080000Z-aaaa1111", "running", 2, True)
    assert round(found.uptime_s) == 3600
    assert (found.kv_predicted, found.kv_reported) == (1000, 1040)
    assert found.models[0].metrics.requests == 4 and found.vllm_metrics


def test_nothing_deployed():
    found = host_status("gpu1", Deployed((), None, None), {}, datetime.now(timezone.utc))
    assert (found.current, found.container, found.uptime_s, found.models) == (None, "absent", None, ())


def test_the_releases_fact_and_the_rollback_target():
    text = ('{"releases": [{"id": "20261130T000000Z-11111111", "gates": [{"passed": true}]},'
            ' {"id": "20261130T120000Z-22222222", "gates": [{"passed": false}]},'
            ' {"id": "20261201T000000Z-33333333", "gates": [{"passed": true}]}],'
            ' "current": "releases/20261201T000000Z-33333333", "container": null}')
    found = parse_releases(text, HOST_PORTS)
    assert found.current == "20261201T000000Z-33333333"
    assert rollback_target(found, None).id == "20261130T000000Z-11111111"  # the failed one in between is skipped
    assert rollback_target(found, "20261130T120000Z-22222222").id == "20261130T120000Z-22222222"
    with pytest.raises(TritonopsError, match="no release nope"):
        rollback_target(found, "nope")
    with pytest.raises(TritonopsError, match="nothing is deployed"):
        rollback_target(Deployed((), None), None)


def test_the_logs_column_says_the_driver_and_a_fallback_as_degraded():
    from tritonops.logs.shipping import log_shipping
    from tritonops.serving.container import logging_digest
    from tritonops.serving.status import log_state

    wanted = log_shipping("syslog", "tcp://c:514", tag="tritonops/d")
    assert log_state({"log_driver": "syslog", "logging": logging_digest(wanted)}, wanted) == "syslog"
    assert log_state({"log_driver": "json-file", "logging": logging_digest(wanted)}, wanted) == \
        "json-file (shipping degraded: syslog tcp://c:514 was down at start)"
    # started for other settings (an older release): not called degraded
    assert log_state({"log_driver": "json-file", "logging": "0" * 12}, wanted) == "json-file"
    assert log_state({}, wanted) == "-" and log_state({"log_driver": "json-file"}, None) == "json-file"


def test_a_kv_cache_below_the_plan_beyond_the_sizings_tolerance_is_said_by_the_gate_and_status():
    from tritonops.serving.outcome import ServeOutcome
    from tritonops.serving.verdict import KV_TOLERANCE, kv_shortfall

    assert kv_shortfall(10_000, 9_800) is None                     # within the 3 % the sizing promises
    assert kv_shortfall(10_000, 12_000) is None and kv_shortfall(10_000, None) is None
    assert kv_shortfall(10_000, 9_000) == pytest.approx(0.10) and KV_TOLERANCE == 0.03
    short = ServeOutcome(status="switched", release="r", ready_s=1.0, kv_reported=9_000, kv_predicted=10_000)
    assert "KV cache below the plan: vLLM has 9,000 tokens, the plan 10,000 (10.0% short" in short.note
    close = ServeOutcome(status="switched", release="r", ready_s=1.0, kv_reported=9_990, kv_predicted=10_000)
    assert "below the plan" not in close.note
    from tritonops.serving.status import HostStatus

    found = HostStatus("h", "r", 1, "running", 60.0, 0, True, True, kv_predicted=10_000, kv_reported=9_000,
                       models=(), vllm_metrics=True)
    assert found.kv_shortfall == pytest.approx(0.10)


def _with_serve(serve: dict) -> str:
    return json.dumps({"releases": [{"id": "20261201T000000Z-33333333", "image_id": "sha256:" + "a" * 64,
                                     "gates": [{"passed": True}], "serve": serve}],
                       "current": "releases/20261201T000000Z-33333333", "container": None})


SERVE = {"models": ["m"], "gpus": [0], "weights_dirs": ["/opt/w"], "deadline_s": 300, "kv_cache_tokens": 10}


@pytest.mark.parametrize("replicas, damaged", [
    (None, None),
    ([{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]}, {"index": 1, "gpus": [1], "ports": [8010, 8011, 8012]}],
     None),
    ([{"index": 1, "gpus": [1], "ports": [8010, 8011, 8012]}],
     "serve: replicas must be numbered 0, 1, ... in order"),
    ([{"index": 0, "gpus": [], "ports": [8000, 8001, 8002]}], "serve.replicas.0.gpus: Tuple should have at least 1"),
    ([{"index": 0, "gpus": [0], "ports": [8000, 8001, 70000]}],
     "serve.replicas.0.ports: ports must be three distinct numbers from 1 to 65535"),
    ([{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002], "cmd": "x"}],  # a key tritonops never writes
     "serve.replicas.0.cmd: Extra inputs are not permitted"),
    ([], "serve: replicas must place at least one replica"),
    ("0-3", "serve.replicas: Input should be a valid tuple"),
])
def test_a_releases_recorded_placement_is_checked_before_anything_starts_from_it(replicas, damaged):
    serve = dict(SERVE, **({"replicas": replicas} if replicas is not None else {}))
    (record,) = parse_releases(_with_serve(serve), HOST_PORTS).releases
    if damaged is None:
        assert record.damaged is None and record.serve is not None
    else:  # one line naming the field, and nothing to start from
        assert record.damaged.startswith("release.json: " + damaged) and record.serve is None, record.damaged


def test_with_replicas_the_host_serves_only_when_every_replica_does():
    from tritonops.serving.status import parse_container_states, replica_status

    states = parse_container_states("/tritonops-d running\n/tritonops-d-1 exited\nError: No such object: x\n")
    assert states == {"tritonops-d": "running", "tritonops-d-1": "exited"}
    ready = {"live": True, "ready": True, "models": {"chat": True}, "metrics": METRICS}
    zero = replica_status(ReplicaRecord(index=0, gpus=(0, 1), ports=(8000, 8001, 8002)), states["tritonops-d"],
                          ready)
    assert (zero.index, zero.gpus, zero.http_port, zero.container, zero.ready, zero.requests) == \
        (0, (0, 1), 8000, "running", True, 4)
    one = replica_status(ReplicaRecord(index=1, gpus=(2, 3), ports=(8010, 8011, 8012)), states["tritonops-d-1"],
                         {"live": False, "ready": False, "models": {"chat": False}, "metrics": None})
    not_loaded = replica_status(ReplicaRecord(index=1, gpus=(2, 3), ports=(8010, 8011, 8012)), "running",
                                {"live": True, "ready": True, "models": {"chat": False}, "metrics": None})
    assert (one.ready, one.requests, not_loaded.ready) == (False, 0, False)
    now = datetime(2026, 12, 1, 9, 0, 0, tzinfo=timezone.utc)
    running = deployed(status="running", running=True, restarts=0, started_at="2026-12-01T08:00:00Z")
    assert host_status("h", running, ready, now, replicas=(zero, zero)).serving
    assert not host_status("h", running, ready, now, replicas=(zero, one)).serving  # replica 0 alone is not enough
    assert host_status("h", running, ready, now).serving  # one container: as before replicas


def test_an_exited_replica_of_the_current_release_with_docker_s_restart_policy_was_stopped_not_crashed():
    from tritonops.serving.status import ContainerFacts, parse_containers, replica_state

    found = parse_containers("/tritonops-d exited unless-stopped r2\n/tritonops-d-1 restarting unless-stopped r2\n"
                             "/tritonops-d-2 exited no r2\n/tritonops-d-3 exited unless-stopped r1\n"
                             "/tritonops-d-4 exited unless-stopped\nError: No such object: tritonops-d-5\n")
    assert found["tritonops-d"] == ContainerFacts("exited", "unless-stopped", "r2")
    assert {name: replica_state(found.get(name), "r2") for name in (f"tritonops-d{s}" for s in
                                                                    ("", "-1", "-2", "-3", "-4", "-5"))} == {
        "tritonops-d": "stopped",       # `tritonops stop` / `docker stop`: Docker would have restarted a crash
        "tritonops-d-1": "restarting",  # a crash Docker is bringing back
        "tritonops-d-2": "exited",      # no restart policy: nothing says it was meant
        "tritonops-d-3": "exited",      # another release's container
        "tritonops-d-4": "exited",      # no release label
        "tritonops-d-5": "absent"}
    assert replica_state(found["tritonops-d"], None) == "exited"  # nothing is current


def test_a_stopped_replica_leaves_the_host_ok_while_the_others_serve_and_a_crashed_one_fails_it():
    ready = {"live": True, "ready": True, "models": {"chat": True}, "metrics": METRICS}
    now = datetime(2026, 12, 1, 9, 0, 0, tzinfo=timezone.utc)
    running = deployed(status="running", running=True, restarts=0, started_at="2026-12-01T08:00:00Z")
    from tritonops.serving.status import replica_status

    def replica(index, state, health):
        return replica_status(ReplicaRecord(index=index, gpus=(index,), ports=(8000, 8001, 8002)), state, health)

    def host(*replicas):
        return host_status("h", running, ready, now, replicas=replicas)

    serving, stopped, crashed = replica(0, "running", ready), replica(1, "stopped", {}), replica(1, "restarting", {})
    assert (host(serving, stopped).serving, host(serving, stopped).ok, host(serving, stopped).stopped) == \
        (True, True, (1,))
    assert not host(serving, crashed).ok and not host(serving, crashed).serving
    every = host(replica(0, "stopped", {}), stopped)
    assert (every.serving, every.ok, every.stopped) == (False, True, (0, 1))  # all stopped: nothing is broken
    assert not host(replica(0, "stopped", {}), crashed).ok
    one = host_status("h", deployed(status="exited", restart="unless-stopped", release="20261201T080000Z-aaaa1111"),
                      {}, now)
    assert (one.container, one.ok, one.stopped) == ("stopped", True, (0,))
    crashed_one = host_status("h", deployed(status="exited", restart="no", release="20261201T080000Z-aaaa1111"), {}, now)
    assert (crashed_one.container, crashed_one.ok) == ("exited", False)


def test_status_reaches_the_replicas_where_the_release_recorded_their_bind_else_where_the_variables_say():
    from tritonops.planning.bind import serving_address

    (recorded,) = parse_releases(_with_serve(dict(SERVE, bind="10.0.0.11")), HOST_PORTS).releases
    (older,) = parse_releases(_with_serve(SERVE), HOST_PORTS).releases
    assert (recorded.bind, older.bind) == ("10.0.0.11", None)
    assert serving_address(recorded.bind, "0.0.0.0") == "10.0.0.11"  # api.status(hosts=...) without the balancers
    assert serving_address(older.bind, "10.0.0.12") == "10.0.0.12"
    assert serving_address(None, "0.0.0.0") == "127.0.0.1"
    (tampered,) = parse_releases(_with_serve(dict(SERVE, bind="10.0.0.11; reboot")), HOST_PORTS).releases
    assert tampered.damaged == "release.json: serve.bind: '10.0.0.11; reboot' is not an IP address"
