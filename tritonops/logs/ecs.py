"""The one log format: ECS field names, one JSON object per line. Pure.

Triton's and vLLM's lines are written in it by `container_logger` inside the container; tritonops'
own deploy events by `event()` here. `parsed` and `display` read a line back (`tritonops logs`; the
gate program on the host has its own reader (host_programs/basic.py), standard library only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tritonops.logs.container_logger import ECS_VERSION

LOGGER_SOURCE = (Path(__file__).parent / "container_logger.py").read_text()


def event(at: str, host: str, deployment: str, release: str, model: str, level: str, message: str,
          **fields: Any) -> dict[str, Any]:
    """One tritonops event (deploy start, a phase, the gate, a rollback) in the same format as
    the container's lines; `fields` go under `tritonops.` (phase, status, reason, seconds)."""
    doc = {"@timestamp": at, "log.level": level, "message": message, "ecs.version": ECS_VERSION,
           "host.name": host, "service.name": "tritonops",
           "labels": {"deployment": deployment, "release": release, "model": model}}
    if fields:
        doc["tritonops"] = fields
    return doc


def parsed(line: str) -> dict[str, Any] | None:
    """The document a line holds, or None when it is not one of ours."""
    if not line.startswith("{"):
        return None
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("message"), str) else None


def display(line: str) -> str:
    """`time level source message` for a formatted line; any other line as it is."""
    doc = parsed(line)
    if not doc:
        return line
    return f"{doc.get('@timestamp', '-')} {str(doc.get('log.level', '-')):<5} " \
           f"{str(doc.get('service.name', '-')):<9} {doc['message']}"
