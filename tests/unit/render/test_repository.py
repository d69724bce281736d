"""The model repository as files, by equality."""

import pytest

from tests.support.model_config import INTERFACE
from tritonops.errors import InputError
from tritonops.render import RepositoryModel, render_model_repository


def test_two_models_one_in_two_versions():
    files = render_model_repository([RepositoryModel("chat", 2, {"model": "b"}),
                                     RepositoryModel("chat", 1, {"model": "a", "enforce_eager": False}),
                                     RepositoryModel("code", 1, {"model": "c"})], metrics=False)
    assert files == {
        "chat/config.pbtxt": 'name: "chat"\nbackend: "vllm"\nmax_batch_size: 0\n' + INTERFACE +
                             "version_policy: { specific: { versions: [ 1, 2 ] } }\n"
                             "model_transaction_policy {\n  decoupled: true\n}\n"
                             "instance_group [\n  {\n    count: 1\n    kind: KIND_MODEL\n  }\n]\n",
        "chat/1/model.json": '{\n  "model": "a",\n  "enforce_eager": false\n}\n',
        "chat/2/model.json": '{\n  "model": "b"\n}\n',
        "code/config.pbtxt": 'name: "code"\nbackend: "vllm"\nmax_batch_size: 0\n' + INTERFACE +
                             "model_transaction_policy {\n  decoupled: true\n}\n"
                             "instance_group [\n  {\n    count: 1\n    kind: KIND_MODEL\n  }\n]\n",
        "code/1/model.json": '{\n  "model": "c"\n}\n',
    }


@pytest.mark.parametrize("model, error", [
    (RepositoryModel("../etc", 1, {}), InputError), (RepositoryModel("chat", 0, {}), InputError),
    (RepositoryModel("chat", "1", {}), InputError), (RepositoryModel("chat", 1.5, {}), InputError),
])
def test_names_and_versions_that_would_leave_the_repository_are_refused(model, error):
    with pytest.raises(error):
        render_model_repository([model])


def test_a_version_given_twice_is_refused():
    with pytest.raises(ValueError, match="chat version 1 given twice"):
        render_model_repository([RepositoryModel("chat", 1, {}), RepositoryModel("chat", 1, {})])
