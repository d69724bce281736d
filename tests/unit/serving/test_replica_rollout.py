"""serving.replica_rollout (issue #42 item 3): the rollout of a release over a host's replicas, planned from the
host's facts, as JSON cases (tests/cases/serving/replica_rollout/*.json: `replicas` the release places, `release`,
the host's `facts`, and the `plan` expected, each step as `action container [new name] [release]`). The serve program's
recovery cases (tests/test_chaos_serve_program.py) are among them."""

import json

import pytest

from tests.support import paths
from tests.support.rollout_plans import said
from tests.support.serve_records import serve_record
from tritonops.serving.replica_rollout import ContainerFact, HostFacts, RolloutPlan, Step, plan_rollout

CASES = paths.CASES / "serving" / "replica_rollout"
DEPLOYMENT = "d"


def facts_of(data: dict) -> HostFacts:
    return HostFacts(containers={name: ContainerFact(**fact) for name, fact in data.get("containers", {}).items()},
                     current=data.get("current"), passed=frozenset(data.get("passed", ())),
                     held_gpus=frozenset(data.get("held_gpus", ())), held_ports=frozenset(data.get("held_ports", ())),
                     serving=serve_record(replicas=data["serving"]) if data.get("serving") else None)


def plan_of(case: dict) -> RolloutPlan:
    return plan_rollout(DEPLOYMENT, case["release"], serve_record(replicas=case["replicas"]), facts_of(case["facts"]))


@pytest.mark.parametrize("path", sorted(CASES.glob("*.json")), ids=lambda path: path.stem)
def test_the_plan_of_each_case(path):
    case = json.loads(path.read_text())
    assert said(plan_of(case)) == case["plan"], case["why"]


def test_there_are_cases_for_every_order():
    orders = {replica["order"] for path in CASES.glob("*.json") for replica in json.loads(path.read_text())["plan"]
              ["replicas"]}
    assert orders == {"unchanged", "boot-first", "stop-first", "refused"}


@pytest.mark.parametrize("path", sorted(CASES.glob("*.json")), ids=lambda path: path.stem)
def test_a_booted_replica_takes_the_door_before_the_old_one_stops_and_a_drained_one_stops_only_drained(path):
    for replica in plan_of(json.loads(path.read_text())).replicas:
        steps = [step.said() for step in replica.steps]
        for at, step in enumerate(replica.steps):
            if step.action == "stop" and step.release is None:  # a serving container stops only once drained,
                # or once the door's server points at the container booted to replace it
                assert f"drain {step.container}" in steps[:at] or any(
                    s.action == "ready" and s.ports for s in replica.steps[:at]), steps
            if replica.order == "boot-first":  # the new one answers on the door before the old one leaves it
                assert step.action != "drain", steps


def test_container_steps_are_docker_argv_and_the_others_are_not():
    assert Step("stop", "tritonops-d").argv() == ("docker", "stop", "--time", "30", "tritonops-d")
    assert Step("stop", "tritonops-d", release="r2").argv() == ("docker", "stop", "--time", "10", "tritonops-d")
    assert Step("rename", "tritonops-d", "tritonops-d--r1").argv() == \
        ("docker", "rename", "tritonops-d", "tritonops-d--r1")
    assert Step("remove", "tritonops-d--r1").argv() == ("docker", "rm", "--force", "tritonops-d--r1")
    assert Step("start", "tritonops-d").argv() == ("docker", "start", "tritonops-d")
    assert [Step(action, "tritonops-d", release="r2").argv() for action in ("run", "gate", "record_gate", "ready",
                                                                             "drain")] == [None] * 5
