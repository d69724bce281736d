"""A run's events per host (pure), and the audit log written with them."""

import json
import os
import stat

from tritonops.deploy.event_log import append_audit, events_argv
from tritonops.logs.shipping import shipping_of
from tritonops.deploy.events import HostLabels, deploy_events
from tritonops.logs.shipping import log_shipping
from tritonops.operations.release import ReleaseMade
from tritonops.playbook.host_task import TaskOutcome
from tritonops.results import HostResult
from tritonops.serving.outcome import ServeOutcome

REL = "20261201T080000Z-6533bf3f"
T0 = 1796112000.0  # 2026-12-01T08:00:00Z


def timeline():
    back = ServeOutcome(status="rolled_back", release=REL, reason="unknown engine argument: 'x'",
                        reason_kind="unknown engine argument", previous=REL[:-1] + "0", kept_as="y")
    return [
        (T0 + 1, HostResult("a", "ok", "2 GPUs", task="facts")),
        (T0 + 1.5, HostResult("b", "unreachable", "timed out", task="facts")),
        (T0 + 2, HostResult("a", "changed", f"mkdir /opt/tritonops/prod/releases/{REL}",
                            TaskOutcome("release", (f"mkdir /opt/tritonops/prod/releases/{REL}",),
                                        outcomes=(ReleaseMade(REL),)), task="release", elapsed_s=0.4)),
        (T0 + 9, HostResult("a", "failed", back.failure, TaskOutcome("serve_release", outcomes=(back,)),
                            task="Triton serves the release (health gate)")),
    ]


def test_each_host_gets_started_phases_gate_and_finished_with_its_labels():
    events = deploy_events(timeline(), {"a": HostLabels("prod", "chat"), "b": HostLabels("prod", "chat")},
                           command="deploy", who="ops@ctl", started=T0, finished=T0 + 10)
    a = events["a"]
    assert [e["message"] for e in a] == [
        "deploy started by ops@ctl", "facts: ok: 2 GPUs", f"release: changed: mkdir /opt/tritonops/prod/releases/{REL}",
        f"gate failed, rolled back: unknown engine argument: 'x' (release {REL[:-1]}0 serves again; the failed "
        "container is kept as y)", "deploy finished: failed"]
    assert a[0]["@timestamp"] == "2026-12-01T08:00:00.000Z" and a[2]["@timestamp"] == "2026-12-01T08:00:02.000Z"
    assert {e["service.name"] for e in a} == {"tritonops"} and {e["host.name"] for e in a} == {"a"}
    assert a[3]["tritonops"] == {"action": "rollback", "status": "rolled_back", "reason": "unknown engine argument: 'x'"}
    assert a[3]["log.level"] == "error" and a[3]["labels"]["model"] == "chat"
    assert events["b"][1]["message"] == "facts: unreachable: timed out" and events["b"][-1]["tritonops"]["status"] == "failed"


def test_the_release_label_is_the_release_the_hosts_tasks_made_or_serve_again():
    events = deploy_events(timeline()[:3], {"a": HostLabels("prod", "chat")}, command="deploy", who="w",
                           started=T0, finished=T0 + 3)
    assert {e["labels"]["release"] for e in events["a"]} == {REL}
    rolled_back = deploy_events(timeline(), {"a": HostLabels("prod", "chat")}, command="deploy", who="w",
                                started=T0, finished=T0 + 10)
    assert {e["labels"]["release"] for e in rolled_back["a"]} == {REL[:-1] + "0"}  # the one serving again


def test_a_passed_gate_says_its_figures_from_the_outcome_and_a_task_with_nothing_to_start_says_so():
    served = ServeOutcome(status="switched", release=REL, ready_s=3.25, kv_reported=11_057_680, kv_predicted=11_053_344,
                          shipping="syslog to tcp://c:514 failed (x)")
    line = [(T0 + 5, HostResult("a", "changed", "start tritonops-prod (its own words)",
                                TaskOutcome("serve_release", ("start",), outcomes=(served,)), task="serve"))]
    gate = deploy_events(line, {"a": HostLabels("prod", "chat")}, command="deploy", who="w", started=T0,
                         finished=T0 + 6)["a"][1]
    assert gate["message"] == (f"gate passed: release {REL}: ready in 3.2 s, KV cache 11,057,680 tokens "
                               "(planned 11,053,344)") and gate["tritonops"]["status"] == "passed"
    assert gate["labels"]["release"] == REL
    nothing = [(T0 + 5, HostResult("a", "ok", "", TaskOutcome("rollback_release"), task="any name"))]
    gate = deploy_events(nothing, {"a": HostLabels("prod", "chat")}, command="rollback", who="w", started=T0,
                         finished=T0 + 6)["a"][1]
    assert gate["tritonops"] == {"action": "gate", "status": "unchanged"}


def test_audit_log_appends_json_lines_in_a_private_file(tmp_path):
    path = tmp_path / "state" / "tritonops" / "audit.log"
    append_audit(path, [{"message": "one"}])
    append_audit(path, [{"message": "two"}, {"message": "three"}])
    assert [json.loads(line)["message"] for line in path.read_text().splitlines()] == ["one", "two", "three"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_events_go_through_the_hosts_own_logging_driver_and_only_when_it_ships():
    shipping = shipping_of({"tritonops_log_driver": "syslog", "tritonops_log_collector": "tcp://c:514"}, "prod")
    assert shipping == log_shipping("syslog", "tcp://c:514", tag="tritonops/prod") and shipping.ships
    argv = events_argv(shipping, "sha256:abc", "prod")
    assert argv[:8] == ("docker", "run", "--rm", "--interactive", "--network", "none", "--label",
                        "tritonops.events=prod")
    assert argv[-3:] == ("--entrypoint", "cat", "sha256:abc") and "syslog-address=tcp://c:514" in argv
    assert not shipping_of({}, "prod").ships
    assert shipping_of({"tritonops_log_driver": "nope"}, "prod") is None
