"""`tritonops prune` from the command line on this machine (a host of `ansible_connection: local`): the releases
fact read from real release folders, this machine's docker engine read by the real program, the decision and the
document. Only --check runs here (this machine's engine is shared): the lab test removes for real."""

import json

import pytest
import yaml

from tests.support.cli import cli
from tritonops.cli.main import main


@pytest.fixture
def deployed(tmp_path):
    """dep-x with five releases, r3 current and r2 what a rollback goes back to."""
    folder = tmp_path / "opt" / "dep-x"
    for n in range(1, 6):
        release = folder / "releases" / f"2026120{n}T000000Z-0000000{n}"
        release.mkdir(parents=True)
        (release / "release.json").write_text(json.dumps({"id": release.name, "image_id": f"sha256:{n:064x}",
                                                         "gates": [{"passed": n <= 3}]}))
    (folder / "current").symlink_to("releases/20261203T000000Z-00000003")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"here": {
        "ansible_connection": "local", "tritonops_root": str(tmp_path / "opt"), "tritonops_deployment": "dep-x"}}}}))
    return str(inventory), folder


def test_prune_check_says_what_it_would_remove_and_why_it_keeps_the_rest_and_changes_nothing(capsys, deployed):
    inventory, folder = deployed
    before = sorted(p.name for p in (folder / "releases").iterdir())
    code, doc = cli(capsys, "prune", "-i", inventory, "--check", "--keep", "1")
    (row,) = doc["results"]
    pruned = row["payload"]
    assert code == 0 and doc["command"] == "prune" and row["status"] == "changed" and row["task"] == "prune"
    assert [(r["release"][-2:], r["remove"], r["why"]) for r in pruned["releases"]] == [
        ("05", False, "one of the 1 newest"), ("04", True, "older than the 1 newest, not current or previous"),
        ("03", False, "current"), ("02", False, "previous: what a rollback goes back to"),
        ("01", True, "older than the 1 newest, not current or previous")]
    assert pruned["check"] is True and pruned["removed"] == [] and pruned["index"] in ("read", "missing")
    assert f"{folder}" in pruned["deployments"]
    assert row["msg"].startswith("would remove 2 releases of dep-x (20261204T000000Z-00000004, "
                                 "20261201T000000Z-00000001)")
    assert sorted(p.name for p in (folder / "releases").iterdir()) == before


def test_prune_check_prints_a_table_of_each_release_kept_or_not(capsys, deployed):
    inventory, _ = deployed
    assert main(["prune", "-i", inventory, "--check"]) == 0
    out = capsys.readouterr().out
    assert "PRUNE (check: nothing removed)" in out and "would remove" in out and "current" in out


@pytest.mark.parametrize("keep", ["-1", "1001"])
def test_a_keep_out_of_range_is_bad_input_before_any_host(capsys, deployed, keep):
    inventory, _ = deployed
    assert main(["prune", "-i", inventory, "--keep", keep]) == 5
    assert "--keep" in capsys.readouterr().err
