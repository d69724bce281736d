"""A controller folder's weights passed host to host (issue #29): what a round's stream carries (pure), the relay
program's folder cargo (a tar of the files out of a model folder, into a staging folder), the folder cargo's
order and verification on real folders of this machine, and the deploy phase that groups the hosts."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile

import pytest

from tritonops.deploy.events import host_events, HostLabels
from tritonops.deploy.weights_phase import shared_folders
from tritonops.host_programs import relay as program
from tritonops.planning.host_plan import HostDeployPlan, ModelInstancePlan
from tritonops.planning.relay import RelayPeer, files_someone_lacks
from tritonops.planning.weights_spec import WeightsSpec
from tritonops.relay.run import RelayHost
from tritonops.results import HostResult
from tritonops.transport.local import LocalTransport
from tritonops.weights.facts import Layout
from tritonops.weights.relay import FolderCargo, WeightsArrival
from tritonops.weights_source.local import local_manifest

FILES = {"config.json": b'{"a": 1}', "shards/model-1.safetensors": b"W" * 300_000, "tokenizer.json": b"T" * 5000}


# ---- what a round's stream carries --------------------------------------------------------------------------

def test_a_round_carries_the_files_some_receiver_lacks_complete_and_leaves_out_those_all_hold():
    files = [("a", 10), ("b", 20), ("c", 30)]
    first = {"a": 10, "b": 20, "c.part": 12}  # c cut short
    second = {"a": 10, "b": 7}  # b shorter: not complete
    assert files_someone_lacks(files, [first, second]) == ("b", "c")
    assert files_someone_lacks(files, [first]) == ("c",)
    assert files_someone_lacks(files, [{"a": 10, "b": 20, "c": 30}]) == ()
    assert files_someone_lacks(files, [{}]) == ("a", "b", "c")
    assert files_someone_lacks(files, []) == ()  # no receivers, nothing to send


# ---- the relay program's folder cargo ------------------------------------------------------------------------

def _folder(path, files=FILES):
    for rel, data in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_bytes(data)
    return path


def _sent(tmp_path, root, order) -> bytes:
    """What `send` streams for a folder order, as a child receives it (through a real pipe)."""
    out = tmp_path / "stream.tar"
    sinks = {"child": subprocess.Popen(["sh", "-c", f"cat > {out}"], stdin=subprocess.PIPE)}
    everyone = dict(sinks)
    sent = program.send_folder(str(root), order, sinks)
    assert program.wait_all(everyone) == {"child": 0}
    data = out.read_bytes()
    assert sent == len(data)
    return data


def test_a_folder_goes_as_a_tar_of_the_files_it_names_and_arrives_whole_in_the_staging_folder(tmp_path):
    root = _folder(tmp_path / "final")
    order = [{"path": rel, "size": len(data)} for rel, data in FILES.items()]
    stream = _sent(tmp_path, root, order)
    staging = tmp_path / "models" / ".m.partial"
    written, kept = program.unpack_into(str(staging), {rel: len(d) for rel, d in FILES.items()}, io.BytesIO(stream))
    assert (written, kept) == (3, 0)
    got = {str(p.relative_to(staging)): p.read_bytes() for p in staging.rglob("*") if p.is_file()}
    assert got == FILES  # no `.part` left


def test_a_file_already_complete_in_the_staging_folder_is_read_past_not_written_again(tmp_path):
    root = _folder(tmp_path / "final")
    staging = _folder(tmp_path / "staging", {"config.json": b'{"a": 1}'})
    before = (staging / "config.json").stat().st_mtime_ns
    stream = _sent(tmp_path, root, [{"path": rel, "size": len(data)} for rel, data in FILES.items()])
    written, kept = program.unpack_into(str(staging), {rel: len(d) for rel, d in FILES.items()}, io.BytesIO(stream))
    assert (written, kept) == (2, 1)
    assert (staging / "config.json").stat().st_mtime_ns == before


def test_a_cut_stream_leaves_the_complete_files_and_the_cut_one_as_part(tmp_path):
    root = _folder(tmp_path / "final")
    order = [{"path": rel, "size": len(data)} for rel, data in sorted(FILES.items())]
    stream = _sent(tmp_path, root, order)
    cut = stream[:stream.index(b"W" * 1000) + 100_000]  # inside the shard
    staging = tmp_path / "staging"
    with pytest.raises(tarfile.ReadError):
        program.unpack_into(str(staging), {rel: len(d) for rel, d in FILES.items()}, io.BytesIO(cut))
    assert (staging / "config.json").read_bytes() == FILES["config.json"]
    assert not (staging / "shards/model-1.safetensors").exists()  # only as `.part` (its last chunk lost)
    assert (staging / "shards/model-1.safetensors.part").stat().st_size < 300_000
    assert not (staging / "tokenizer.json").exists()


def test_a_stream_holding_a_file_it_was_not_told_of_is_refused(tmp_path):
    root = _folder(tmp_path / "final")
    stream = _sent(tmp_path, root, [{"path": "config.json", "size": len(FILES["config.json"])}])
    with pytest.raises(SystemExit) as exit_:
        program.unpack_into(str(tmp_path / "staging"), {"tokenizer.json": 5000}, io.BytesIO(stream))
    assert exit_.value.code == 2
    with pytest.raises(SystemExit):  # the right name, another size
        program.unpack_into(str(tmp_path / "staging"), {"config.json": 3}, io.BytesIO(stream))
    assert not (tmp_path / "staging" / "config.json").exists()


def test_a_file_that_changed_size_at_the_root_stops_the_send(tmp_path):
    root = _folder(tmp_path / "final")
    sinks = {"child": subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)}
    with pytest.raises(SystemExit) as exit_:
        program.send_folder(str(root), [{"path": "config.json", "size": 99}], sinks)
    program.wait_all(sinks)
    assert exit_.value.code == 1


@pytest.mark.parametrize("rel", ["/etc/passwd", "../x", "a/../../x", "a//b", "./a", "", "a\nb", "a\\b", None])
def test_a_file_outside_the_folder_is_refused(rel):
    with pytest.raises(SystemExit) as exit_:
        program.checked_file(rel, 1)
    assert exit_.value.code == 2


@pytest.mark.parametrize("sink", [
    {"kind": "folder", "staging": "relative/path", "files": {}},
    {"kind": "folder", "staging": "/opt/x/../etc", "files": {}},
    {"kind": "folder", "staging": "/opt/x", "files": {"a": -1}},
    {"kind": "folder", "staging": "/opt/x", "files": ["a"]},
    {"kind": "shell", "command": "sh"},
])
def test_a_hostile_sink_is_refused(sink):
    with pytest.raises(SystemExit) as exit_:
        program.checked_sink(sink)
    assert exit_.value.code == 2


@pytest.mark.parametrize("order", [
    {"kind": "folder", "root": "/opt/m", "files": [{"path": "../../etc/shadow", "size": 1}]},
    {"kind": "folder", "root": "opt/m", "files": []},
    {"kind": "image", "image_id": "latest", "skip": []},
    {"kind": "image", "image_id": "sha256:" + "0" * 64, "skip": ["layer"]},
    {"kind": "other"},
])
def test_a_hostile_send_order_is_refused(order):
    with pytest.raises(SystemExit) as exit_:
        program.checked_order(order)
    assert exit_.value.code == 2


def test_a_folder_sink_and_order_are_kept_as_given():
    assert program.checked_sink(None) == {"kind": "image"}
    sink = {"kind": "folder", "staging": "/opt/tritonops/d/models/.m@1.partial", "files": {"a/b.json": 3}}
    assert program.checked_sink(sink) == sink
    order = {"kind": "folder", "root": "/opt/tritonops/d/models/m@1", "files": [{"path": "a/b.json", "size": 3}]}
    assert program.checked_order(order) == order
    assert program.local_sink("/run/tritonops-relay-x", "x", {"kind": "image"}) == ["docker", "load", "-q"]
    assert program.local_sink("/run/tritonops-relay-x", "x", sink)[1:] == ["/run/tritonops-relay-x/relay.py",
                                                                            "unpack", "x"]


# ---- the folder as a cargo, on folders of this machine ------------------------------------------------------

def _local_host(name: str) -> RelayHost:
    return RelayHost(name, LocalTransport(name), RelayPeer(name, "10.0.0.1", 22, "root"))


def test_the_cargo_sends_what_a_receiver_lacks_and_verifies_a_copy_against_the_manifest(tmp_path):
    source = _folder(tmp_path / "controller" / "tiny")
    manifest, _ = local_manifest(str(source))
    first = Layout(str(tmp_path / "h1" / "models"), "tiny@1")
    _folder(tmp_path / "h1" / "models" / ".tiny@1.partial", {"config.json": FILES["config.json"],
                                                             "tokenizer.json": b"T" * 10})  # one complete, one not
    cargo = FolderCargo(manifest, first)
    order = cargo.order([_local_host("h1")])
    assert order.left_out == 1
    assert order.request == {"kind": "folder", "root": first.final, "files": [  # in the manifest's order
        {"path": "tokenizer.json", "size": 5000}, {"path": "shards/model-1.safetensors", "size": 300_000}]}
    assert cargo.sink(_local_host("h1")) == {"kind": "folder", "staging": first.staging,
                                             "files": {rel: len(data) for rel, data in FILES.items()}}
    # what arrived is checked file by file: a wrong file is discarded, nothing reaches the final path
    _folder(tmp_path / "h1" / "models" / ".tiny@1.partial", {**FILES, "tokenizer.json": b"X" * 5000})
    problem = cargo.verify(_local_host("h1"))
    assert "verification failed" in problem and "tokenizer.json" in problem
    assert not (tmp_path / "h1" / "models" / "tiny@1").exists()
    _folder(tmp_path / "h1" / "models" / ".tiny@1.partial")
    assert cargo.verify(_local_host("h1")) == ""
    final = tmp_path / "h1" / "models" / "tiny@1"
    assert {str(p.relative_to(final)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in final.rglob("*") if p.is_file() and p.name != ".tritonops-manifest.json"} == {
        f.path: f.sha256 for f in manifest.files}


# ---- the deploy phase ---------------------------------------------------------------------------------------

def _plan(host: str, *sources: dict) -> HostDeployPlan:
    models = tuple(ModelInstancePlan(f"m{i}", 1, "ref", weights=WeightsSpec(args, "id", "/f", "/f/m"))
                   for i, args in enumerate(sources))
    return HostDeployPlan(host, models)


def test_the_deploy_relays_each_controller_folder_that_two_hosts_or_more_need():
    tiny = {"source": "controller_dir", "deployment": "chat", "root": "/opt/tritonops", "path": "/data/tiny"}
    other = dict(tiny, path="/data/other")
    hub = {"source": "huggingface", "deployment": "chat", "root": "/opt/tritonops", "repo": "org/model"}
    plans = {"a": _plan("a", tiny, hub), "b": _plan("b", tiny, other), "c": _plan("c", tiny, tiny),
             "d": _plan("d", hub)}
    assert shared_folders(["a", "b", "c", "d"], plans) == [(tiny, ["a", "b", "c"])]
    assert shared_folders(["a", "d"], plans) == []  # one host: its playbook task pushes it, as before


def test_a_weights_arrival_says_where_from_in_the_result_and_the_deploy_events():
    arrival = WeightsArrival("b", "tiny@1", "relayed", "a", 3000, 0, 1, "tiny@1 from a (host to host)")
    assert arrival.status == "changed"
    assert WeightsArrival("a", "tiny@1", "held").status == "ok"
    assert WeightsArrival("c", "tiny@1", "refused", msg="not enough disk").status == "failed"
    events = host_events("b", HostLabels("chat", "m"), [(10.0, HostResult("b", "changed", arrival.msg, arrival,
                                                                          task="weights"))],
                         command="deploy", who="me@here", started=9.0, finished=11.0)
    assert events[1]["tritonops"] == {"action": "phase", "phase": "weights", "status": "changed", "seconds": 0.0,
                                      "weights_model": "tiny@1", "weights_how": "relayed", "weights_source": "a",
                                      "bytes_received": 3000, "bytes_from_controller": 0}
