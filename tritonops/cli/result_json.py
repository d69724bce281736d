"""The one JSON shape of every command's --json (docs/result-schema.json): the command, its exit
code, one row per host result (host, task, status, changed, msg, elapsed_s, diff, payload) and
Ansible's recap. Each command supplies only its rows' payloads and, beside them, a few summary
fields of its own (deploy: the plans and files; image build: the images and bytes sent)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from tritonops.exit_codes import exit_code_of
from tritonops.results import HostResult, Recap, json_data

SCHEMA = "tritonops.result/1"


def row(result: HostResult, payload: Any = None) -> dict[str, Any]:
    return {"host": result.host, "task": result.task, "status": result.status, "changed": result.changed,
            "msg": result.msg, "elapsed_s": round(result.elapsed_s, 3), "diff": result.diff, "payload": payload}


def document(command: str, results: Iterable[HostResult], *,
             payload: Callable[[HostResult], Any] = lambda result: json_data(result.payload),
             exit_code: int | None = None, **summary: Any) -> dict[str, Any]:
    """The command's --json document. `exit_code`: the command's own when it is more than the hosts'
    statuses say (a stopped rollout); `summary`: the command's fields beside the results."""
    results = list(results)
    code = exit_code_of(result.status for result in results) if exit_code is None else exit_code
    return {"schema": SCHEMA, "command": command, "exit_code": int(code),
            "results": [row(result, payload(result)) for result in results],
            "recap": Recap.of(results).to_json(), **summary}
