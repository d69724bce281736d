"""The weights programs on this machine (a local transport): fact, finalize, a push, a cut push."""

from __future__ import annotations

import hashlib

from tritonops.lab.hub import tiny_model
from tritonops.transport.local import LocalTransport
from tritonops.weights import transfer
from tritonops.weights.operation import ModelWeightsArgs, ensure_weights

MODEL = tiny_model()


def _folder(tmp_path):
    src = tmp_path / "tiny"
    src.mkdir()
    for name, data in MODEL.items():
        (src / name).write_bytes(data)
    return src


def test_push_verify_then_nothing_then_a_corrupted_file_is_replaced(tmp_path):
    args = ModelWeightsArgs(source="controller_dir", path=str(_folder(tmp_path)), deployment="d",
                            root=str(tmp_path / "host"))
    host = LocalTransport("here")
    first = ensure_weights(host, args)
    total = sum(map(len, MODEL.values()))
    assert first.changed and first.bytes_moved == total
    assert not ensure_weights(host, args).changed
    shard = tmp_path / "host/d/models" / first.model_id / "model-00002-of-00002.safetensors"
    with open(shard, "r+b") as f:
        f.seek(100)
        f.write(b"XXXX")
    again = ensure_weights(host, args)
    assert again.changed and again.bytes_moved == len(MODEL[shard.name])
    assert hashlib.sha256(shard.read_bytes()).hexdigest() == hashlib.sha256(MODEL[shard.name]).hexdigest()


def test_a_cut_push_leaves_nothing_at_the_final_path_and_resumes(tmp_path, monkeypatch):
    args = ModelWeightsArgs(source="controller_dir", path=str(_folder(tmp_path)), deployment="d",
                            root=str(tmp_path / "host"))
    copy = transfer._copy

    def cut(source, write, offset, size):
        if size > (1 << 20):
            copy(source, write, offset, offset + 1000)
            raise OSError("cut")
        return copy(source, write, offset, size)

    monkeypatch.setattr(transfer, "_copy", cut)
    try:
        ensure_weights(LocalTransport(), args)
    except OSError:
        pass
    monkeypatch.setattr(transfer, "_copy", copy)
    models = tmp_path / "host/d/models"
    assert [p.name for p in models.iterdir()] and all(p.name.startswith(".") for p in models.iterdir())
    done = ensure_weights(LocalTransport(), args)
    assert done.bytes_moved == sum(len(v) for k, v in MODEL.items() if k >= "model-00001") - 1000


def test_a_weights_task_reports_the_bytes_its_transfer_moved_then_none(tmp_path):
    """What bench/deploy_noop.py counts: the bytes each weights step moved, from the transfer itself
    (a WeightsMoved outcome per step), through the playbook engine as a deploy runs it."""
    import yaml

    from tritonops.playbook import compile_playbook, load_run_inputs, run_playbook
    from tritonops.playbook.host_task import TaskOutcome
    from tritonops.transport.sessions import SessionPool

    (tmp_path / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": {"h1": {"ansible_connection": "local"}}}}))
    task = {"name": "weights", "model_weights": {"source": "controller_dir", "path": str(_folder(tmp_path)),
                                                 "deployment": "d", "root": str(tmp_path / "host"), "runner": "host"}}
    (tmp_path / "site.yml").write_text(yaml.safe_dump([{"name": "p", "hosts": "all", "tasks": [task]}]))

    def moved() -> int:
        compiled = compile_playbook(load_run_inputs(str(tmp_path / "site.yml"), [str(tmp_path / "inventory.yml")]))
        with SessionPool(compiled.connections) as pool:
            (result,) = run_playbook(compiled, pool).results
        assert result.ok and isinstance(result.payload, TaskOutcome), result.msg
        return sum(outcome.bytes for outcome in result.payload.outcomes if isinstance(outcome, transfer.WeightsMoved))

    assert moved() == sum(map(len, MODEL.values()))
    assert moved() == 0  # verified: nothing moves


def test_a_push_tells_its_bytes_as_it_goes_when_the_task_is_given_a_progress_listener(tmp_path):
    from tritonops.playbook.host_task import RunHooks, run_host_task
    from tritonops.playbook.known_operations import operation_named
    from tritonops.transport.sessions import HostSession
    from tritonops.transport.spec import ConnectionSpec

    big = _folder(tmp_path)
    (big / "model-00001-of-00002.safetensors").write_bytes(b"\0" * (3 << 20) + MODEL["model-00001-of-00002.safetensors"])
    args = ModelWeightsArgs(source="controller_dir", path=str(big), deployment="d", root=str(tmp_path / "host"))
    session = HostSession(ConnectionSpec("here", "localhost", local=True), LocalTransport("here"))
    heard = []
    result = run_host_task(session, operation_named("model_weights"), [args], check=False, diff=False,
                           hooks=RunHooks(on_progress=heard.append))
    assert result.changed, result.msg
    pushed = [event for event in heard if event.what == "weights"]
    total = sum(p.stat().st_size for p in big.iterdir())
    assert len(pushed) >= 4 and [e.done for e in pushed] == sorted(e.done for e in pushed)
    assert pushed[-1].done == pushed[-1].total == total and pushed[-1].host == "here"
    assert pushed[0].note.startswith("pushing tiny@") and not pushed[0].note.endswith(".partial")
