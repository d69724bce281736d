"""The JSON Schema of `tritonops probe --json` (docs/probe-schema.json is generated from it)."""

from __future__ import annotations

import json
import sys

from tritonops.facts.model import SCHEMA_VERSION, report_json_schema


def probe_report_schema() -> dict:
    schema = report_json_schema()
    schema["$id"] = f"https://tritonops.dev/schemas/{SCHEMA_VERSION}.json"
    schema["title"] = f"tritonops probe report ({SCHEMA_VERSION})"
    return schema


if __name__ == "__main__":
    sys.stdout.write(json.dumps(probe_report_schema(), indent=2, sort_keys=True) + "\n")
