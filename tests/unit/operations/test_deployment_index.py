"""The host's index of its deployments: its shape read back (pure), and the host program that adds to it, run as a
host runs it (python3 -c, nothing of tritonops on the path) on real files."""

import json
import os
import subprocess
import sys

import pytest

from tritonops import host_programs
from tritonops.errors import TritonopsError
from tritonops.serving.deployment_index import DeploymentIndex, IndexedDeployment, index_text, parse_index


def add(path, root, deployment) -> subprocess.CompletedProcess:
    return subprocess.run((sys.executable, *host_programs.argv("deployment_index", "add", str(path), root,
                                                               deployment)[1:]),
                          capture_output=True, text=True, timeout=60, cwd="/", env={"PATH": os.environ["PATH"]})


def test_an_index_reads_back_as_the_deployments_it_names_sorted_and_once():
    text = json.dumps({"version": 1, "deployments": [{"root": "/srv/t", "deployment": "b"},
                                                     {"root": "/opt/tritonops", "deployment": "a"},
                                                     {"root": "/srv/t/", "deployment": "b"}]})
    index = parse_index(text)
    assert index == DeploymentIndex((IndexedDeployment("/opt/tritonops", "a"), IndexedDeployment("/srv/t", "b")))
    assert index.names("/srv/t", "b") and not index.names("/srv/t", "a")
    assert parse_index(index_text(index)) == index


def test_adding_a_deployment_is_idempotent():
    index = DeploymentIndex().with_deployment("/opt/tritonops", "chat")
    assert index.with_deployment("/opt/tritonops/", "chat") == index
    assert index.with_deployment("/opt/tritonops", "code").deployments == (
        IndexedDeployment("/opt/tritonops", "chat"), IndexedDeployment("/opt/tritonops", "code"))


@pytest.mark.parametrize("text, why", [
    ("not json", "Expecting value"),
    ('{"version": 2, "deployments": []}', "not a version 1 index"),
    ('{"version": 1, "deployments": {}}', "deployments is not a list"),
    ('{"version": 1, "deployments": [{"root": "/opt", "deployment": "a", "x": 1}]}', "not {root, deployment}"),
    ('{"version": 1, "deployments": [{"root": "opt", "deployment": "a"}]}', "absolute path"),
    ('{"version": 1, "deployments": [{"root": "/opt/../etc", "deployment": "a"}]}', "absolute path"),
    ('{"version": 1, "deployments": [{"root": "/opt", "deployment": "../a"}]}', "is not allowed"),
])
def test_a_file_that_is_not_the_index_is_damaged_and_says_why(text, why):
    with pytest.raises(TritonopsError) as caught:
        parse_index(text)
    assert "is not tritonops' index of deployments" in str(caught.value) and why in str(caught.value)


def test_the_host_program_adds_a_deployment_once_in_the_shape_the_parser_reads(tmp_path):
    path = tmp_path / "var" / "deployments.json"
    first = add(path, "/opt/tritonops", "chat")
    assert first.returncode == 0 and json.loads(first.stdout) == {"added": True}
    again = add(path, "/opt/tritonops", "chat")
    assert again.returncode == 0 and json.loads(again.stdout) == {"added": False}
    assert json.loads(add(path, "/opt/tritonops", "code").stdout) == {"added": True}
    assert json.loads(add(path, "/data", "chat").stdout) == {"added": True}
    expected = DeploymentIndex().with_deployment("/opt/tritonops", "chat").with_deployment(
        "/opt/tritonops", "code").with_deployment("/data", "chat")
    assert path.read_text() == index_text(expected)  # byte for byte what the shape writes
    assert parse_index(path.read_text()) == expected
    assert sorted(p.name for p in path.parent.iterdir()) == ["deployments.json", "deployments.json.lock"]


def test_the_host_program_leaves_a_file_that_is_not_the_index_as_it_is(tmp_path):
    path = tmp_path / "deployments.json"
    path.write_text('{"something": "else"}')
    done = add(path, "/opt/tritonops", "chat")
    assert done.returncode == 3 and "is left as it is: not a version 1 index" in done.stderr
    assert path.read_text() == '{"something": "else"}'


def test_deploy_adds_its_deployment_to_a_missing_index_or_one_naming_others_only():
    from tritonops.facts.queries import Facts, FileFact
    from tritonops.operations.deployment_index import add_argv, deployment_index
    from tritonops.operations.steps import Run

    args = deployment_index.Args.model_validate({"root": "/opt/tritonops", "deployment": "chat"})
    missing = Facts.of(FileFact("/var/lib/tritonops/deployments.json", "missing"))
    others = Facts.of(FileFact("/var/lib/tritonops/deployments.json", "file", text=index_text(
        DeploymentIndex().with_deployment("/opt/tritonops", "code"))))
    step = Run(add_argv("/opt/tritonops", "chat"), timeout_s=60.0, program="deployment_index")
    assert list(deployment_index.steps(args, missing)) == [step]
    assert list(deployment_index.steps(args, others)) == [step]
    assert step.argv[3:] == ("add", "/var/lib/tritonops/deployments.json", "/opt/tritonops", "chat")
    # what --check and a deploy's output say of it: the program's name and its arguments, not its 60-line source
    # (issue #45 item 1)
    assert step.describe() == ("python3 -c '<host program deployment_index>' add /var/lib/tritonops/deployments.json "
                               "/opt/tritonops chat")


@pytest.mark.parametrize("args", [{"root": "opt", "deployment": "chat"}, {"root": "/opt/../etc", "deployment": "c"},
                                  {"root": "/opt", "deployment": "-rf"}, {"root": "/opt", "deployment": "a b"}])
def test_the_index_task_refuses_a_root_or_deployment_it_could_not_index(args):
    from pydantic import ValidationError

    from tritonops.operations.deployment_index import deployment_index
    with pytest.raises(ValidationError):
        deployment_index.Args.model_validate(args)
