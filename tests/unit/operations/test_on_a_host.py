"""Operations carried out on a real (local) host: the steps do what they say, a second look finds
nothing left to do, and a release folder appears whole or not at all."""

import json
import os
from pathlib import Path

import pytest

from tests.support.serve_records import serve_record
from tritonops.errors import HostError
from tritonops.facts.queries import Facts
from tritonops.facts.query_program import read_facts
from tritonops.operations.execute import run_step
from tritonops.operations.release import content_digest, weights_digest
from tritonops.playbook.known_operations import operation_named
from tritonops.transport.local import LocalTransport

HOST = LocalTransport("local")


def converge(name: str, **arguments) -> list:
    operation = operation_named(name)
    args = operation.Args.model_validate(arguments)
    steps = list(operation.steps(args, read_facts(HOST, list(operation.facts(args)))))
    for step in steps:
        run_step(HOST, step)
    return steps


def release_args(root, **overrides):
    args = {"root": str(root), "files": {"chat/config.pbtxt": 'backend: "vllm"\n', "chat/1/model.json": "{}\n"},
            "image_id": "sha256:abc", "created": "20261201T080000Z",
            "metadata": {"who": "me"}}
    return {**args, **overrides}


def test_a_release_is_written_whole_and_a_second_run_does_nothing(tmp_path):
    assert converge("release", **release_args(tmp_path))
    (release,) = os.listdir(tmp_path / "releases")
    folder = tmp_path / "releases" / release
    assert (folder / "model_repository" / "chat" / "1" / "model.json").read_text() == "{}\n"
    record = json.loads((folder / "release.json").read_text())
    assert record["id"] == release and record["who"] == "me" and record["image_id"] == "sha256:abc"
    assert record["content_digest"].startswith(release.split("-")[1])
    assert converge("release", **release_args(tmp_path, created="20261202T000000Z")) == []
    assert os.listdir(tmp_path / "releases") == [release]


def test_changed_content_makes_a_second_release_and_keeps_the_first(tmp_path):
    converge("release", **release_args(tmp_path))
    converge("release", **release_args(tmp_path, created="20261202T000000Z", image_id="sha256:def"))
    assert len(os.listdir(tmp_path / "releases")) == 2


def test_an_interrupted_release_never_shows_under_its_final_name(tmp_path):
    operation = operation_named("release")
    args = operation.Args.model_validate(release_args(tmp_path))
    steps = list(operation.steps(args, read_facts(HOST, list(operation.facts(args)))))
    for step in steps[:2]:  # stopped after the first file
        run_step(HOST, step)
    assert [name for name in os.listdir(tmp_path / "releases") if not name.startswith(".")] == []
    converge("release", **release_args(tmp_path))  # the next run finishes it
    assert [name for name in os.listdir(tmp_path / "releases") if not name.startswith(".")] == \
        [f"20261201T080000Z-{content_digest(args, weights_digest(args, Facts()))[:8]}"]


@pytest.mark.parametrize("files", [{"../etc/passwd": "x"}, {"chat/../../x": "x"}, {"-rf/config.pbtxt": "x"}])
def test_release_paths_cannot_leave_the_release(tmp_path, files):
    with pytest.raises(ValueError):
        operation_named("release").Args.model_validate(release_args(tmp_path, files=files))


def test_a_step_that_fails_on_the_host_says_which_and_why(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(HostError) as caught:
        converge("put_file", path=str(tmp_path / "file" / "below"), content="x")
    assert "put" in str(caught.value) and "import" not in str(caught.value)  # not the program's source


def test_a_bind_address_other_than_0_0_0_0_is_part_of_what_makes_a_release_the_same():
    def release(bind=None, where=None):
        serve = serve_record(replicas=[{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]}], bind=bind).to_release()
        args = operation_named("release").Args.model_validate(release_args(Path(where or "/tmp/r"),
                                                                           metadata={"serve": serve}))
        return content_digest(args, "w")

    # a host put behind a balancer gets a new release bound privately; one without stays the release it was
    assert release() == release("0.0.0.0")
    assert release("10.0.0.11") != release() and release("10.0.0.11") != release("10.0.0.12")
