"""`tritonops status` with balancers: a row per balancer (task "door") in the one result document, and a balancer
that cannot be read is its own one-line result while the others still show. The balancers here are this machine
(ansible_connection local: the real runtime program, no haproxy listening on its admin socket) and a closed port;
the lab test (tests/lab/test_door_observability_lab.py) reads a real door over SSH."""

import json
import os

import jsonschema
import pytest
import yaml

from tests.support.network import closed_port
from tests.support.paths import FIXTURES, REPO
from tritonops.door.runtime import SOCKET
from tritonops.cli.main import main

SCHEMA = json.loads((REPO / "docs" / "result-schema.json").read_text())


def test_each_balancer_is_a_door_row_and_one_that_cannot_be_read_says_why_in_one_line(capsys, tmp_path):
    assert not os.path.exists(SOCKET)  # no haproxy of tritonops' runs on this machine
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {
        "gone": {"ansible_host": "127.0.0.1", "ansible_port": closed_port()}},
        "children": {"tritonops_balancers": {"hosts": {
            "door-here": {"ansible_connection": "local"},
            "door-gone": {"ansible_host": "127.0.0.1", "ansible_port": closed_port()}}}}}}, sort_keys=False))
    code = main(["status", "-i", str(path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    rows = {(row["host"], row["task"]): row for row in doc["results"]}
    assert list(rows) == [("gone", "status"), ("door-here", "door"), ("door-gone", "door")]
    here = rows[("door-here", "door")]
    assert here["status"] == "failed" and here["msg"].startswith("haproxy runtime API: ") and "\n" not in here["msg"]
    assert rows[("door-gone", "door")]["status"] == "unreachable"
    assert code == doc["exit_code"] == 4

    assert main(["status", "-i", str(path)]) == 4  # the tables print too
    out = capsys.readouterr().out
    assert "DOOR (HAProxy on each balancer)" in out and "door-here" in out and "door-gone" in out


def test_a_door_row_s_payload_has_the_schema_s_door_status_shape():
    from tritonops.door.servers import door_status
    from tritonops.door.runtime import parse_stat
    from tritonops.results import json_data

    found = door_status(parse_stat((FIXTURES / "haproxy" / "door_show_stat.txt").read_text()))
    row = {"host": "door-1", "task": "door", "status": "ok", "changed": False, "msg": found.summary(),
           "elapsed_s": 0.1, "diff": None, "payload": json_data(found)}
    doc = {"schema": "tritonops.result/1", "command": "status", "exit_code": 0, "results": [row], "recap": {}}
    jsonschema.validate(doc, SCHEMA)
    row["payload"]["servers"][0].pop("state")
    try:
        jsonschema.validate(doc, SCHEMA)
    except jsonschema.ValidationError as err:
        assert "'state' is a required property" in err.message
    else:
        raise AssertionError("a door row without a server's state passed the schema")


def test_metrics_gives_each_balancer_a_door_row_too_with_the_schema_s_door_figures_shape(capsys, tmp_path):
    from tritonops.door.figures import door_figures
    from tritonops.door.runtime import parse_stat
    from tritonops.results import json_data

    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"tritonops_balancers": {"hosts": {
        "door-here": {"ansible_connection": "local"}}}}}}))
    code = main(["metrics", "-i", str(path), "--json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    assert [(r["host"], r["task"], r["status"]) for r in doc["results"]] == [("door-here", "door", "failed")]
    assert doc["results"][0]["msg"].startswith("haproxy runtime API: ") and code == 2

    found = door_figures(parse_stat((FIXTURES / "haproxy" / "door_show_stat.txt").read_text()))
    doc["results"][0].update(status="ok", payload=json_data(found))
    doc.update(exit_code=0)
    jsonschema.validate(doc, SCHEMA)
    doc["results"][0]["payload"]["doors"][0]["requests"] = "14"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)
