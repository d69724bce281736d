"""`tritonops releases`: the releases fact read back from release.json files as the release operation writes
them (the real host program, run here), and the listing made of it: who, engine-args digest, the last gate,
current and previous. Pure apart from the program's run."""

import hashlib
import json
import os
import subprocess
import sys

from tests.support.serve_records import HOST_PORTS, serve_record
from tritonops.operations.release import GATES_KEY, ReleaseArgs, release_id, release_json
from tritonops.serving import releases
from tritonops.serving.releases import (Deployed, ListedRelease, ReleaseListing, ReleaseRecord, engine_args_digest,
                                        parse_releases, release_listing)

IMAGE_A, IMAGE_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
SERVE = {"models": ["chat"], "gpus": [0], "weights_dirs": ["/opt/w"], "deadline_s": 300, "kv_cache_tokens": 10}
ARGS_4 = '{"model": "/opt/w", "max_num_seqs": 4}\n'
ARGS_8 = '{"model": "/opt/w", "max_num_seqs": 8}\n'


def write_release(root, created: str, image: str, model_json: str, who: str, gates: list) -> str:
    """A release folder as the release operation writes it, with the gates the serve program appended."""
    args = ReleaseArgs(root=str(root), image_id=image, created=created,
                       files={"chat/config.pbtxt": 'backend: "vllm"\n', "chat/1/model.json": model_json},
                       metadata={"who": who, "serve": SERVE, "models": [{"name": "chat", "engine": {}}]})
    name = release_id(args, "w")
    folder = root / "releases" / name
    folder.mkdir(parents=True)
    body = json.loads(release_json(args, "w"))
    if gates:
        body[GATES_KEY] = gates
    (folder / "release.json").write_text(json.dumps(body))
    return name


def read_back(root) -> Deployed:
    done = subprocess.run([sys.executable, "-c", releases.SOURCE, str(root), "tritonops-listing-no-such-container"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return parse_releases(done.stdout, HOST_PORTS)


def digest_of(model_json: str) -> str:
    sha = hashlib.sha256(model_json.encode()).hexdigest()
    return hashlib.sha256(f"chat/1/model.json={sha}\n".encode()).hexdigest()[:12]


def test_every_kept_release_is_listed_newest_first_with_current_and_the_one_a_rollback_goes_back_to(tmp_path):
    passed, failed = {"at": "t", "passed": True, "why": ""}, {"at": "t", "passed": False, "why": "unknown engine "
                                                                                                  "argument x"}
    first = write_release(tmp_path, "20261201T080000Z", IMAGE_A, ARGS_4, "ann@ctl", [passed])
    refused = write_release(tmp_path, "20261201T090000Z", IMAGE_B, ARGS_4, "bob@ctl2", [failed])
    serving = write_release(tmp_path, "20261201T100000Z", IMAGE_A, ARGS_8, "ann@ctl", [passed])
    stopped = write_release(tmp_path, "20261201T110000Z", IMAGE_A, ARGS_4, "ann@ctl", [])
    os.symlink(f"releases/{serving}", tmp_path / "current")

    assert release_listing(read_back(tmp_path)) == ReleaseListing(serving, first, (
        ListedRelease(stopped, "20261201T110000Z", "ann@ctl", IMAGE_A, digest_of(ARGS_4), ("chat",), "not gated",
                      None, None),
        ListedRelease(serving, "20261201T100000Z", "ann@ctl", IMAGE_A, digest_of(ARGS_8), ("chat",), "passed", None,
                      "current"),
        ListedRelease(refused, "20261201T090000Z", "bob@ctl2", IMAGE_B, digest_of(ARGS_4), ("chat",), "failed",
                      "unknown engine argument x", None),  # failed its gate: never what a rollback goes back to
        ListedRelease(first, "20261201T080000Z", "ann@ctl", IMAGE_A, digest_of(ARGS_4), ("chat",), "passed", None,
                      "previous"),
    ))


def test_the_current_release_is_the_record_current_points_to(tmp_path):
    first = write_release(tmp_path, "20261201T080000Z", IMAGE_A, ARGS_4, "ann@ctl", [])
    second = write_release(tmp_path, "20261201T090000Z", IMAGE_B, ARGS_8, "ann@ctl", [])
    assert read_back(tmp_path).current_release is None  # nothing switched to yet
    os.symlink(f"releases/{first}", tmp_path / "current")
    deployed = read_back(tmp_path)
    assert deployed.current_release == deployed.release(first) and deployed.current_release.image_id == IMAGE_A
    assert Deployed(deployed.releases, "20261201T070000Z-gone").current_release is None  # its folder removed
    assert second != first


def test_the_engine_args_digest_names_the_model_json_files_only():
    model_json = {"chat/1/model.json": "1" * 64, "code/1/model.json": "2" * 64}
    with_others = {**model_json, "chat/config.pbtxt": "3" * 64}
    assert engine_args_digest(with_others) == engine_args_digest(model_json) == hashlib.sha256(
        f"chat/1/model.json={'1' * 64}\ncode/1/model.json={'2' * 64}\n".encode()).hexdigest()[:12]
    assert engine_args_digest({"chat/1/model.json": "4" * 64}) != engine_args_digest(model_json)
    assert engine_args_digest({"chat/config.pbtxt": "3" * 64}) is None  # a release.json listing no model.json
    assert engine_args_digest(None) is None and engine_args_digest(["chat/1/model.json"]) is None


def test_a_damaged_release_is_listed_with_its_reason_and_no_release_is_previous_before_any_switch(tmp_path):
    folder = tmp_path / "releases" / "20261201T080000Z-0000000a"
    folder.mkdir(parents=True)
    (folder / "release.json").write_text("{truncated")
    listing = release_listing(read_back(tmp_path))
    (damaged,) = listing.releases
    assert (listing.current, listing.previous) == (None, None)
    assert (damaged.gate, damaged.role, damaged.why.startswith("JSONDecodeError")) == ("damaged", None, True)


def test_nothing_kept_is_an_empty_listing(tmp_path):
    assert release_listing(read_back(tmp_path)) == ReleaseListing(None, None, ())


def test_a_release_gated_again_after_it_served_shows_its_last_gate_and_is_still_gone_back_to():
    served_then_failed = ReleaseRecord("20261201T080000Z-1", "20261201T080000Z", IMAGE_A, serve_record(**SERVE), ("chat",),
                                       ({"passed": True}, {"passed": False, "why": "not ready in 300 s"}))
    current = ReleaseRecord("20261201T090000Z-2", "20261201T090000Z", IMAGE_A, serve_record(**SERVE), ("chat",), ({"passed": True},))
    listing = release_listing(Deployed((served_then_failed, current), current.id))
    assert listing.previous == served_then_failed.id  # it served once: a rollback may go back to it
    assert (listing.releases[1].gate, listing.releases[1].why) == ("failed", "not ready in 300 s")


def test_the_releases_command_lists_a_hosts_releases_as_a_table_and_as_the_result_document(capsys, tmp_path):
    import jsonschema
    import yaml

    from tests.support.result_schema import SCHEMA
    from tritonops.cli.main import main
    from tritonops.results import json_data

    root = tmp_path / "opt" / "dep-x"
    first = write_release(root, "20261201T080000Z", IMAGE_A, ARGS_4, "ann@ctl", [{"passed": True}])
    second = write_release(root, "20261201T100000Z", IMAGE_A, ARGS_8, "ann@ctl", [{"passed": True}])
    os.symlink(f"releases/{second}", root / "current")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"here": {
        "ansible_connection": "local", "tritonops_root": str(tmp_path / "opt"), "tritonops_deployment": "dep-x"}}}}))
    assert main(["releases", "-i", str(inventory), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    (row,) = doc["results"]
    assert row["payload"] == json_data(release_listing(read_back(root)))
    assert row["msg"] == f"2 releases of dep-x; current {second}; previous {first}"
    assert main(["releases", "-i", str(inventory)]) == 0
    table = capsys.readouterr().out
    assert all(word in table for word in (first, second, "current", "previous", "ann@ctl", digest_of(ARGS_8)))
