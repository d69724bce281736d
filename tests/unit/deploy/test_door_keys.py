"""deploy/door_keys: which balancers a key rotation goes to and what its results say (ids, never a key). The
rotation itself runs against the real haproxy in tests/unit/host_programs/test_door_keys.py and on the lab in
tests/lab/test_door_lab.py."""


import jsonschema
import pytest

from tests.support.paths import REPO
from tests.support.playbooks import deploy_inputs
from tritonops.door.program import DoorApplied, KeysChanged
from tritonops.cli.main import main
from tritonops.deploy.door_keys import KeysOptions, change_keys, said
from tritonops.errors import InputError

INVENTORY = """all:
  hosts:
    gpu-1: {ansible_host: 10.0.0.11}
  children:
    tritonops_balancers:
      hosts:
        door-1: {ansible_host: 10.0.0.2}
        door-2: {ansible_host: 10.0.0.3, tritonops_api_keys_file: relative.keys}
"""


def test_balancers_without_a_keys_file_or_with_a_bad_one_fail_before_any_host_is_contacted(tmp_path):
    results = change_keys(deploy_inputs(tmp_path, INVENTORY), KeysOptions("rotate"))  # no SSH: these addresses do not exist
    assert [(r.host, r.status) for r in results] == [("door-1", "failed"), ("door-2", "failed")]
    assert results["door-1"].msg == "no tritonops_api_keys_file: this door needs no key, there is none to rotate"
    assert "tritonops_api_keys_file 'relative.keys' is not an absolute path" in results["door-2"].msg
    assert "hosts.yml:8" in results["door-2"].msg


def test_a_run_without_a_balancer_is_refused_naming_the_selection(tmp_path):
    with pytest.raises(InputError, match="no balancer matches gpu-1: API keys are on the hosts of tritonops_bal"):
        change_keys(deploy_inputs(tmp_path, INVENTORY, limit="gpu-1"), KeysOptions("rotate"))


def test_results_name_key_ids_and_what_still_opens():
    a, b = "k:aaaaaaaaaaaa", "k:bbbbbbbbbbbb"
    rotated = DoorApplied("reloaded", False, (), "2.6.12", KeysChanged("/etc/k", a, (), (b,)))
    assert said(rotated, KeysOptions("rotate")) == ("made a new key k:aaaaaaaaaaaa in /etc/k (0600; read it there); "
                                                    "k:bbbbbbbbbbbb no longer open; HAProxy 2.6.12 reloaded")
    overlap = DoorApplied("reloaded", False, (), "2.6.12", KeysChanged("/etc/k", a, (b,), ()))
    assert said(overlap, KeysOptions("rotate", keep_old=True)) == (
        "made a new key k:aaaaaaaaaaaa in /etc/k (0600; read it there); the old key k:bbbbbbbbbbbb still open until "
        "`tritonops door retire-keys`; HAProxy 2.6.12 reloaded")
    retired = DoorApplied("reloaded", False, (), "2.6.12", KeysChanged("/etc/k", None, (a,), (b,)))
    assert said(retired, KeysOptions("retire")) == ("k:aaaaaaaaaaaa stays the only key in /etc/k; k:bbbbbbbbbbbb no "
                                                    "longer open; HAProxy 2.6.12 reloaded")
    would = DoorApplied("would reload", False, (), "2.6.12", KeysChanged("/etc/k", None, (), (b,)))
    assert said(would, KeysOptions("rotate", check=True)) == (
        "would make a new key in /etc/k (0600; read it there); k:bbbbbbbbbbbb would no longer open; "
        "HAProxy would reload")


def test_the_command_says_a_failed_balancer_in_its_exit_code_and_json(tmp_path, capsys):
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    code = main(["door", "rotate-key", "-i", str(tmp_path / "hosts.yml"), "--limit", "door-1", "--json",
                 "--audit-log", "none"])
    import json

    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads((REPO / "docs" / "result-schema.json").read_text()))
    assert doc["command"] == "door rotate-key"
    assert code == 2 and [(r["host"], r["status"]) for r in doc["results"]] == [("door-1", "failed")]


def test_the_change_goes_into_the_audit_log_like_a_deploy_s_and_check_mode_writes_none(tmp_path):
    import json

    log = tmp_path / "audit.log"
    change_keys(deploy_inputs(tmp_path, INVENTORY), KeysOptions("rotate", check=True, audit_log=log))
    assert not log.exists()
    change_keys(deploy_inputs(tmp_path, INVENTORY, limit="door-1"), KeysOptions("rotate", audit_log=log))
    docs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [d["message"] for d in docs] == [
        docs[0]["message"], "door keys: failed: no tritonops_api_keys_file: this door needs no key, there is none "
                            "to rotate", "door rotate-key finished: failed"]
    assert docs[0]["message"].startswith("door rotate-key started by ") and {d["host.name"] for d in docs} == {"door-1"}
