"""Which weights a model reference needs on a host, as model_weights arguments, and where they land."""

import pytest

from tritonops.planning.weights_spec import ControllerFolders, weights_spec
from tritonops.errors import InputError


def spec(ref, variables=None, folders=()):
    return weights_spec(ref, variables or {}, root="/opt/tritonops", deployment="prod",
                        folders=ControllerFolders(digests={path: "ab" * 32 for path in folders}))


def test_a_hub_id_is_a_hugging_face_download_with_the_hosts_hub_settings():
    got = spec("Qwen/Qwen2.5-0.5B-Instruct", {"tritonops_hf_endpoint": "http://mirror:8080",
                                              "tritonops_weights_revision": "a" * 40,
                                              "tritonops_hf_token_file": "/etc/hf.token",
                                              "tritonops_weights_runner": "host"})
    assert got.args == {"source": "huggingface", "deployment": "prod", "root": "/opt/tritonops",
                        "repo": "Qwen/Qwen2.5-0.5B-Instruct", "revision": "a" * 40, "token_file": "/etc/hf.token",
                        "endpoint": "http://mirror:8080", "runner": "host"}
    assert got.model_id == "Qwen--Qwen2.5-0.5B-Instruct@aaaaaaaaaaaa"
    assert got.folder == "/opt/tritonops/prod/models/Qwen--Qwen2.5-0.5B-Instruct@aaaaaaaaaaaa"
    assert got.manifest == got.folder + "/.tritonops-manifest.json"


def test_a_folder_on_the_controller_is_pushed_and_named_by_its_content():
    got = spec("/data/models/tiny", folders={"/data/models/tiny"})
    assert got.args == {"source": "controller_dir", "deployment": "prod", "root": "/opt/tritonops",
                        "path": "/data/models/tiny"}
    assert got.model_id == "tiny@" + "ab" * 6


def test_the_source_can_be_named_and_hub_settings_do_not_leak_into_a_path_source():
    got = spec("ignored", {"tritonops_weights_source": "host_path", "tritonops_weights_path": "/mnt/llama",
                           "tritonops_hf_endpoint": "http://mirror"})
    assert got.args == {"source": "host_path", "deployment": "prod", "root": "/opt/tritonops", "path": "/mnt/llama"}
    modelscope = spec("qwen/Qwen2-7B", {"tritonops_weights_source": "modelscope"})
    assert modelscope.model_id == "modelscope.qwen--Qwen2-7B@master"


def test_a_repo_override_applies_to_the_download_not_to_sizing():
    got = spec("Qwen/Qwen2.5-7B-Instruct", {"tritonops_weights_repo": "mirror-org/Qwen2.5-7B-Instruct"})
    assert got.args["repo"] == "mirror-org/Qwen2.5-7B-Instruct"


@pytest.mark.parametrize("ref", ["not a repo", "a/b/c", "../x"])
def test_a_reference_that_is_neither_a_folder_nor_a_repo_is_refused(ref):
    with pytest.raises(InputError):
        spec(ref)
