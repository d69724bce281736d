"""Every command's --json is the one result document (docs/result-schema.json): a test per command.
Hosts here are unreachable (a closed loopback port) or this machine, so every command runs its real
code path to the document; the lab tests check the same documents with real payloads."""

import json

import jsonschema
import pytest
import yaml

from tests.support.facts import host_facts
from tests.support.network import closed_port
from tests.support.result_schema import SCHEMA
from tritonops.cli.main import main
from tritonops.facts.model import HostProbe, ProbeReport, report_from_json, report_to_json


def document(capsys, *argv, lines=False):
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    docs = [json.loads(line) for line in out.splitlines()] if lines else [json.loads(out)]
    for doc in docs:
        jsonschema.validate(doc, SCHEMA)
        assert doc["exit_code"] == code
    return code, docs[-1]


@pytest.fixture
def gone(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"gone": {
        "ansible_host": "127.0.0.1", "ansible_port": closed_port(), "tritonops_model": "Qwen/Qwen2.5-0.5B-Instruct"}}}}))
    return str(path)


@pytest.mark.parametrize("command", [["status"], ["metrics"], ["deploy", "--check"], ["rollback", "--check"],
                                     ["image", "status"], ["probe"], ["releases"], ["lock", "status"],
                                     ["prune"]])
def test_a_command_on_an_unreachable_host_says_so_in_the_document(capsys, gone, command):
    code, doc = document(capsys, *command, "-i", gone)
    assert code == 4 and doc["command"] == " ".join(word for word in command if not word.startswith("-"))
    assert {row["status"] for row in doc["results"] if row["host"] == "gone"} == {"unreachable"}
    assert doc["recap"]["gone"]["unreachable"] >= 1


def test_logs_print_one_document_per_round(capsys, gone):
    code, doc = document(capsys, "logs", "-i", gone, lines=True)
    assert code == 4 and doc["command"] == "logs" and doc["results"][0]["payload"] == {"lines": []}


def test_probe_of_this_machine_carries_its_facts_and_plan_reads_the_document_back(capsys, tmp_path):
    code, doc = document(capsys, "probe", "--local")
    (row,) = doc["results"]
    assert row["payload"]["system"]["cpu_count"] >= 1 and doc["facts_schema"] == "tritonops.probe/1"
    assert report_from_json(doc).hosts[0].facts.system.cpu_count == row["payload"]["system"]["cpu_count"]


def test_plan_rows_carry_each_hosts_plan_and_files(capsys, tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {
        "h1": {"ansible_host": "127.0.0.1", "tritonops_model": "Qwen/Qwen2.5-0.5B-Instruct"}}}}))
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(report_to_json(ProbeReport(hosts=(HostProbe(host="h1", status="ok",
                                                                             facts=host_facts(1)),)))))
    code, doc = document(capsys, "plan", "-i", str(inventory), "--facts", str(facts))
    (row,) = doc["results"]
    assert code == 0 and row["status"] == "ok" and row["payload"]["plan"]["tensor_parallel_size"] == 1
    assert set(row["payload"]["repository"]) == {"vllm_model/config.pbtxt", "vllm_model/1/model.json"}


def test_lab_status_is_a_document_too(capsys, tmp_path):
    code, doc = document(capsys, "lab", "status", "--prefix", "tritonops-nosuchlab", "--state-dir", str(tmp_path))
    assert doc["command"] == "lab status" and doc["results"] == [] and doc["hosts"] == []


def test_a_document_missing_a_row_field_does_not_validate():
    bad = {"schema": "tritonops.result/1", "command": "status", "exit_code": 0, "recap": {},
           "results": [{"host": "h", "task": "", "status": "ok", "changed": False, "msg": "", "elapsed_s": 0.1,
                        "diff": None}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, SCHEMA)
