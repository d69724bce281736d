"""planning.serve_record (issue #42): release.json's `serve` as one typed, versioned record; every `serve` an earlier
tritonops wrote reads into it, anything else is one line naming the field."""

import json

import pytest

from tests.support import paths
from tritonops.planning.serve_record import ReplicaRecord, ServeRecord, ServeRecordError

FIXTURES = paths.FIXTURES / "release_json"
PORTS = {"http": 8000, "grpc": 8001, "metrics": 8002, "openai": 9000}
BEFORE_REPLICAS = {"models": ["vllm_model"], "gpus": [1], "weights_dirs": ["/opt/tritonops/default/models/m@1a"],
                   "deadline_s": 300, "kv_cache_tokens": 4096}  # what tritonops wrote before replicas and binds


def test_a_release_a_lab_host_wrote_reads_as_the_record_and_writes_back_the_same_serve():
    serve = json.loads((FIXTURES / "lab-2080ti-one-replica.json").read_text())["serve"]
    record = ServeRecord.from_release(serve, host_ports={"http": 1, "grpc": 2, "metrics": 3})  # its own ports win over the host's
    assert record.replicas == (ReplicaRecord(index=0, gpus=(0,), ports=(8000, 8001, 8002)),)
    assert (record.bind, record.frontend, record.cluster, record.gpus) == ("0.0.0.0", "kserve", None, (0,))
    assert record.replicas[0].container("dep-a") == "tritonops-dep-a"
    written = record.to_release()
    assert {key: value for key, value in written.items() if key not in ("version", "frontend")} == serve
    assert ServeRecord.from_release(written, host_ports=PORTS) == record


def test_a_release_made_before_replicas_is_one_replica_on_its_gpus_at_the_host_s_ports():
    record = ServeRecord.from_release(BEFORE_REPLICAS, host_ports={"http": 9000, "grpc": 9001, "metrics": 9002})
    assert record.replicas == (ReplicaRecord(index=0, gpus=(1,), ports=(9000, 9001, 9002)),)
    assert record.bind is None and record.frontend == "kserve" and record.deadline_s == 300.0
    assert record.mode.name == "kserve"
    # in the OpenAI mode a replica's third port is its OpenAI port, not a metrics port
    openai = ServeRecord.from_release({**BEFORE_REPLICAS, "frontend": "openai"}, host_ports=PORTS)
    assert openai.replicas[0].ports == (8000, 8001, 9000) and openai.mode.name == "openai"


def worker_cluster(host: str) -> dict:
    return {"name": "big", "head": "h1", "workers": ["h2"], "tensor_parallel_size": 1, "pipeline_parallel_size": 2,
            "members": [{"host": "h1", "address": "10.0.0.1", "stage": 0, "layers": [0, 39], "interface": None},
                        {"host": "h2", "address": "10.0.0.2", "stage": 1, "layers": [40, 79], "interface": None}],
            "host": host, "gpus": [0], "token": "k:0123456789ab", "object_store_bytes": 2 ** 30}


def test_a_pipeline_worker_places_no_replica_and_its_gpus_are_its_ray_node_s():
    record = ServeRecord.from_release({**BEFORE_REPLICAS, "replicas": [], "cluster": worker_cluster("h2")},
                                      host_ports=PORTS)
    assert record.replicas == () and record.cluster.worker and record.gpus == (0,)
    with pytest.raises(ServeRecordError, match="only a pipeline's worker places none"):
        ServeRecord.from_release({**BEFORE_REPLICAS, "replicas": [], "cluster": worker_cluster("h1")},
                                 host_ports=PORTS)


@pytest.mark.parametrize("change, named", [
    ({"frontend": "opneai"}, "serve.frontend: .*'opneai' is not a serving mode"),
    ({"bind": "private"}, "serve.bind: .*'private' is not an IP address"),
    ({"weights_dirs": ["models/m"]}, "serve.weights_dirs: .*absolute"),
    ({"deadline_s": 0}, "serve.deadline_s"),
    ({"models": []}, "serve.models"),
    ({"replicas": [{"index": 1, "gpus": [0], "ports": [1, 2, 3]}]}, "numbered 0, 1"),
    ({"replicas": [{"index": 0, "gpus": [0, 0], "ports": [1, 2, 3]}]}, "serve.replicas.0.gpus: .*distinct"),
    ({"replicas": [{"index": 0, "gpus": [0], "ports": [1, 2, 2]}]}, "serve.replicas.0.ports: .*distinct"),
    ({"replicas": [{"index": 0, "gpus": [0], "ports": [1, 2, 3], "name": None}]}, "serve.replicas.0.name"),
    ({"color": "blue"}, "serve.color"),
    ({"version": 3}, "serve.version 3 is not one this tritonops reads"),
    ({"kv_cache_tokens": True}, "serve.kv_cache_tokens"),
])
def test_a_serve_no_tritonops_wrote_is_one_line_naming_its_field(change, named):
    with pytest.raises(ServeRecordError, match=named) as raised:
        ServeRecord.from_release({**BEFORE_REPLICAS, **change}, host_ports=PORTS)
    assert "\n" not in str(raised.value)


def test_the_record_cannot_be_changed_once_made():
    record = ServeRecord.from_release(BEFORE_REPLICAS, host_ports=PORTS)
    with pytest.raises(Exception):
        record.bind = "10.0.0.1"


# What content_digest gave these releases before it read the record (computed with the dict reader of commit
# a8b789a): a release's digest is its identity on the host, so a no-op redeploy after an upgrade must find the same
# release (0 restarts). Each case stands for a serve that tritonops writes.
CLUSTER_WORKER = {"name": "big", "head": "h1", "workers": ["h2"], "tensor_parallel_size": 1,
                  "pipeline_parallel_size": 2, "host": "h2", "gpus": [0], "token": "k:0123456789ab",
                  "object_store_bytes": None,
                  "members": [{"host": "h1", "address": "10.0.0.1", "stage": 0, "layers": [0, 39], "interface": None},
                              {"host": "h2", "address": "10.0.0.2", "stage": 1, "layers": [40, 79],
                               "interface": "ens1"}]}
DIGESTS_BEFORE_THE_RECORD = [
    ({"replicas": [{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]}], "bind": "0.0.0.0"},
     "b18722ba575eb463b97ddd4d9bb9dbe08a1b37ef09516a09605cd494ff6b3dc3"),
    ({"replicas": [{"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]},
                   {"index": 1, "gpus": [1, 2], "ports": [8010, 8011, 8012]}], "bind": "10.0.0.11"},
     "af0973e84c89b8d6a1682f92312dcb4ed8701803a326beed7186df0b115e006a"),
    ({"replicas": [{"index": 0, "gpus": [0], "ports": [8000, 8001, 9000]}], "bind": None, "frontend": "openai"},
     "fa31b31534d3f94e921655cbab6265b60bb0104169b28600da76b88cdd692bd8"),
    ({"replicas": [], "bind": "10.0.0.2", "cluster": CLUSTER_WORKER},
     "9a451c9b2d54eda9f70fe28c0aac5e4c0a132500e0c29af02ed3549e953a57ea"),
]


@pytest.mark.parametrize("fields, digest", DIGESTS_BEFORE_THE_RECORD)
def test_a_release_s_digest_read_from_the_record_is_the_one_tritonops_gave_it_before(fields, digest):
    from tests.support.serve_records import serve_record
    from tritonops.operations.release import ReleaseArgs, content_digest

    record = serve_record(**fields)
    args = ReleaseArgs(root="/opt/tritonops/chat", files={"chat/config.pbtxt": 'backend: "vllm"\n'},
                       image_id="sha256:" + "1" * 64, created="20261206T000000Z",
                       metadata={"serve": record.to_release()})
    assert content_digest(args, "w" * 64) == digest
    moved = record.model_copy(update={"bind": "10.9.9.9"})  # and it still tells releases apart
    assert content_digest(args.model_copy(update={"metadata": {"serve": moved.to_release()}}), "w" * 64) != digest


def test_a_standby_slot_is_kept_swapped_by_a_rollout_and_left_out_of_the_release_s_identity():
    # Kamal's order (issue #42): a replica's standby slot on a spare GPU; a rollout that boots it there records the
    # two swapped, and the release is the same release (the same digest) wherever its replicas run
    from tests.support.serve_records import serve_record
    from tritonops.operations.release import ReleaseArgs, content_digest
    from tritonops.planning.serve_record import ReplicaSlot

    fields, digest = DIGESTS_BEFORE_THE_RECORD[1]
    spare = [{**replica, "standby": {"gpus": [3 + replica["index"]], "ports": [8020 + 10 * replica["index"],
                                                                               8021 + 10 * replica["index"],
                                                                               8022 + 10 * replica["index"]]}}
             for replica in fields["replicas"]]
    record = serve_record(**{**fields, "replicas": spare})
    first = record.replicas[1]
    assert first.standby == ReplicaSlot(gpus=(4,), ports=(8030, 8031, 8032))
    booted = first.swapped()
    assert (booted.gpus, booted.ports, booted.standby) == ((4,), (8030, 8031, 8032), first.slot)
    assert booted.planned() == first and first.planned() == first and booted.swapped() == first
    on_standby = record.with_replica(booted)
    assert on_standby.replicas == (record.replicas[0], booted)
    written = on_standby.to_release()
    assert written["replicas"][1]["standby"] == {"gpus": [1, 2], "ports": [8010, 8011, 8012]}
    assert ServeRecord.from_release(written, host_ports=PORTS) == on_standby
    assert "standby" not in serve_record(**fields).to_release()["replicas"][0]  # none: no key (the same file)

    def digest_of(serve: ServeRecord) -> str:
        args = ReleaseArgs(root="/opt/tritonops/chat", files={"chat/config.pbtxt": 'backend: "vllm"\n'},
                           image_id="sha256:" + "1" * 64, created="20261206T000000Z",
                           metadata={"serve": serve.to_release()})
        return content_digest(args, "w" * 64)

    assert digest_of(record) == digest_of(on_standby) == digest  # the release before standby slots, unchanged
