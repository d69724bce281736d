"""Model ids, argument checks, and the token: never in argv, describe(), repr() or an error."""

from __future__ import annotations

import json
import os

import pytest
from pydantic import ValidationError

from tritonops.errors import InputError
from tritonops.playbook.known_operations import operation_named
from tritonops.weights.operation import ModelWeightsArgs
from tritonops.weights_source.source import Source, source_of
from tritonops.weights.token import Secret, read_token
from tritonops.weights.transfer import HubFetch, Runner

TOKEN = "hf_SUPERsecretTOKEN_1234567890"


@pytest.mark.parametrize("source, expected", [
    (Source("huggingface", "Qwen/Qwen2.5-0.5B-Instruct", "main"), "Qwen--Qwen2.5-0.5B-Instruct@main"),
    (Source("huggingface", "Qwen/Qwen2.5-0.5B-Instruct", "a09a35458c702b33eeacc393d103063234e8bc28"),
     "Qwen--Qwen2.5-0.5B-Instruct@a09a35458c70"),
    (Source("huggingface", "gpt2", "refs/pr/1"), "gpt2@refs--pr--1"),
    (Source("modelscope", "Qwen/Qwen2.5-0.5B-Instruct", "master"), "modelscope.Qwen--Qwen2.5-0.5B-Instruct@master"),
])
def test_model_ids(source, expected):
    assert source.model_id() == expected


def test_host_path_and_controller_ids_are_safe_and_distinct():
    a = Source("host_path", path="/srv/models/My Model").model_id()
    b = Source("host_path", path="/data/models/My Model").model_id()
    assert a != b and a.startswith("local.My-Model@")
    assert Source("controller_dir", path="/x/tiny/").model_id("ab" * 32) == "tiny@abababababab"


@pytest.mark.parametrize("repo", ["../etc", "a/b/c", "-rf", "a--b/c", "a b", "", "x" * 97])
def test_unsafe_repos_are_refused(repo):
    with pytest.raises(InputError):
        source_of("huggingface", repo=repo)


@pytest.mark.parametrize("kwargs", [
    {"source": "huggingface", "repo": "a/b", "deployment": "d", "bogus": 1},
    {"source": "huggingface", "repo": "a/b", "deployment": "../d"},
    {"source": "huggingface", "repo": "a/b", "deployment": "d", "root": "relative"},
    {"source": "huggingface", "repo": "a/b", "deployment": "d", "endpoint": "ftp://x"},
    {"source": "host_path", "path": "/srv/../etc", "deployment": "d"},
    {"source": "host_path", "repo": "a/b", "deployment": "d"},
    {"source": "s3", "repo": "a/b", "deployment": "d"},
    {"source": "huggingface", "repo": "a/b", "deployment": "d", "token_env": "A B"},
])
def test_bad_arguments_are_errors(kwargs):
    with pytest.raises((InputError, ValidationError)):
        ModelWeightsArgs(**kwargs)


def test_the_operation_is_registered_with_strict_args():
    op = operation_named("model_weights")
    assert op.Args is ModelWeightsArgs and op.Args.model_config["extra"] == "forbid"


def _fetch(token=None, **more) -> HubFetch:
    return HubFetch(Source("huggingface", "a/b", "main"), "/m/.x.partial", "/m/x", Runner("image"), token, **more)


def test_the_token_is_only_in_the_stdin_request():
    step = _fetch(Secret(TOKEN), endpoint="https://user:pw@mirror.example/")
    shown = [repr(step), step.describe(), " ".join(step.argv()), str(step.token)]
    assert not any(TOKEN in text for text in shown)
    assert "pw@" not in step.describe() and "****@" in step.describe()
    assert json.loads(json.dumps(step.request()))["token"] == TOKEN


def test_a_token_read_at_run_time_is_named_not_shown(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    step = _fetch(token_env="HF_TOKEN")
    assert "$HF_TOKEN" in step.describe() and TOKEN not in step.describe() + repr(step)
    assert read_token("HF_TOKEN", None).reveal() == TOKEN


def test_a_token_file_must_be_private(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    os.chmod(path, 0o644)
    with pytest.raises(InputError, match="chmod 600") as err:
        read_token(None, str(path))
    assert TOKEN not in str(err.value)
    os.chmod(path, 0o600)
    assert read_token(None, str(path)).reveal() == TOKEN


def test_the_image_runner_mounts_the_models_folder_and_shares_the_host_network():
    argv = Runner("image", "tritonserver:vllm_env").argv("/opt/tritonops/d/models", "PROGRAM")
    assert argv[:5] == ("docker", "run", "--rm", "-i", "--network")
    assert "/opt/tritonops/d/models:/opt/tritonops/d/models" in argv
    assert argv[-4:] == ("python3", "tritonserver:vllm_env", "-c", "PROGRAM")
    assert Runner("host").argv("/m", "P") == ("python3", "-c", "P")


def test_a_modelscope_request_is_data():
    step = HubFetch(Source("modelscope", "Qwen/Qwen2.5-0.5B-Instruct", "master"), "/m/.s", "/m/f", Runner("host"),
                    endpoint="https://modelscope.cn")
    assert step.request() == {"kind": "modelscope", "repo": "Qwen/Qwen2.5-0.5B-Instruct", "revision": "master",
                              "include": [], "staging": "/m/.s", "endpoint": "https://modelscope.cn", "token": None}
