"""rollback --check --diff says what goes back (issue #45 item 4), as deploy's restart lines do: from the two
releases' records (operations.restarts.rollback_lines, pure)."""

from tritonops.operations.restarts import rollback_lines
from tritonops.planning.serve_record import ServeRecord
from tritonops.serving.releases import ReleaseRecord

REPLICA = {"index": 0, "gpus": [0], "ports": [8000, 8001, 8002]}


def release(id_, image="sha256:" + "a" * 64, seqs=(256,), engine="e1", replicas=(REPLICA,), **serve):
    record = ServeRecord.from_json({"models": ["m"], "replicas": list(replicas), "weights_dirs": ["/w"],
                                    "deadline_s": 300, "kv_cache_tokens": 0, **serve})
    return ReleaseRecord(id_, None, image, record, ("m",), max_num_seqs=seqs, engine_args=engine)


def test_a_rollback_names_the_image_max_num_seqs_and_engine_arguments_that_go_back():
    now = release("r2", image="sha256:" + "b" * 64, seqs=(64,), engine="e2")
    assert rollback_lines(now, release("r1")) == [
        "back from release r2 to r1: image bbbbbbbbbbbb -> aaaaaaaaaaaa; max_num_seqs 64 -> 256; "
        "engine arguments (model.json) e2 -> e1"]


def test_a_rollback_names_replicas_mode_and_bind_that_change_and_says_when_nothing_else_does():
    two = (REPLICA, {"index": 1, "gpus": [1], "ports": [8010, 8011, 8012]})
    now = release("r2", replicas=two, frontend="openai", bind="10.0.0.1")
    assert rollback_lines(now, release("r1", bind="10.0.0.1")) == [
        "back from release r2 to r1: replicas 2 -> 1; frontend openai -> kserve"]
    assert rollback_lines(release("r2"), release("r1")) == [
        "back from release r2 to r1: the same image, engine arguments and replicas"]
    assert rollback_lines(None, release("r1")) == ["back to release r1: nothing serves now"]
