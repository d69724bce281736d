"""A command run as `tritonops ... --json` runs it: its exit code and its one result document, checked against the
schema."""

import json

import jsonschema

from tests.support.result_schema import SCHEMA
from tritonops.cli.main import main


def cli(capsys, *argv):
    code = main([*argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == code
    return code, doc
