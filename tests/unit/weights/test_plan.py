"""Weights planning as data: tests/cases/weights/plan/*.json hold a source, the host's weights fact (and a
controller folder's manifest) and the steps expected (their describe()), or the refusal."""

from __future__ import annotations

import json

import pytest

from tests.support import paths
from tritonops.weights.facts import Layout, parse_weights_fact
from tritonops.weights_source.manifest import FileEntry, Manifest
from tritonops.weights.plan import WeightsRefused, plan_host_path, plan_hub, plan_push
from tritonops.weights_source.source import source_of
from tritonops.weights.transfer import Runner

CASES = sorted((paths.CASES / "weights" / "plan").glob("*.json"))


def plan_case(case: dict):
    s = case["source"]
    source = source_of(s["kind"], repo=s.get("repo"), revision_=s.get("revision"), path=s.get("path"),
                       include=tuple(s.get("include", ())))
    fact = parse_weights_fact(json.dumps(case["fact"]))
    if source.is_hub:
        layout = Layout("/opt/tritonops/d/models", source.model_id())
        return plan_hub(source, layout, fact, runner=Runner("host"), token_env="HF_TOKEN")
    layout = Layout("/opt/tritonops/d/models", "m@1")
    if source.kind == "host_path":
        return plan_host_path(source, layout, fact)
    local = Manifest(tuple(FileEntry(**f) for f in case["local"]))
    return plan_push(source, layout, fact, local, {f.path: f"/data/tiny/{f.path}" for f in local.files})


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_planning_case(path):
    case = json.loads(path.read_text())
    if "refused" in case:
        with pytest.raises(WeightsRefused) as err:
            plan_case(case)
        assert str(err.value) == case["refused"]
    else:
        assert [step.describe() for step in plan_case(case).steps] == case["steps"]


def test_there_are_cases_for_each_source_kind():
    kinds = {json.loads(p.read_text())["source"]["kind"] for p in CASES}
    assert kinds == {"huggingface", "controller_dir", "host_path"}
