"""The few Ansible filters roles commonly need, so a role reads the same under tritonops."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import yaml


def to_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "on", "1", "true", "y", "t")
    return bool(value)


FILTERS = {
    "to_json": lambda value, **kw: json.dumps(value, **kw),
    "to_nice_json": lambda value, indent=4: json.dumps(value, indent=indent, sort_keys=True),
    "to_yaml": lambda value: yaml.safe_dump(value, default_flow_style=False, sort_keys=False),
    "to_nice_yaml": lambda value, indent=2: yaml.safe_dump(value, indent=indent, default_flow_style=False),
    "bool": to_bool,
    "b64encode": lambda value: base64.b64encode(str(value).encode()).decode(),
    "basename": lambda value: os.path.basename(str(value)),
    "dirname": lambda value: os.path.dirname(str(value)),
}
