"""The one JSON shape of every command's --json (docs/result-schema.json): the command, its exit
code, one row per host result (host, task, status, changed, msg, elapsed_s, diff, payload) and
Ansible's recap. Each command supplies only its rows' payloads and, beside them, a few summary
fields of its own (deploy: the plans and files; image build: the images and bytes sent)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Mapping

from tritonops.exit_codes import exit_code_of
from tritonops.results import HostResult, Recap

SCHEMA = "tritonops.result/1"


def row(result: HostResult, payload: Any = None) -> dict[str, Any]:
    return {"host": result.host, "task": result.task, "status": result.status, "changed": result.changed,
            "msg": result.msg, "elapsed_s": round(result.elapsed_s, 3), "diff": result.diff, "payload": payload}


def payload_data(payload: Any) -> Any:
    """A typed payload as JSON data (dataclasses as objects, tuples as lists); None stays None."""
    if dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        return _plain(dataclasses.asdict(payload))
    return _plain(payload)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def document(command: str, results: Iterable[HostResult], *,
             payload: Callable[[HostResult], Any] = lambda result: payload_data(result.payload),
             exit_code: int | None = None, **summary: Any) -> dict[str, Any]:
    """The command's --json document. `exit_code`: the command's own when it is more than the hosts'
    statuses say (a stopped rollout); `summary`: the command's fields beside the results."""
    results = list(results)
    code = exit_code_of(result.status for result in results) if exit_code is None else exit_code
    return {"schema": SCHEMA, "command": command, "exit_code": int(code),
            "results": [row(result, payload(result)) for result in results],
            "recap": Recap.of(results).to_json(), **summary}
