"""The one result document every command's --json writes (docs/result-schema.json), to validate against."""

import json

from tests.support.paths import REPO

SCHEMA = json.loads((REPO / "docs" / "result-schema.json").read_text())
