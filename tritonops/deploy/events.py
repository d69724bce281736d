"""A deploy's (or rollback's) own events per host, in the log format of the containers' lines
(logs.ecs): started, each phase and task with its outcome, the health gate's result or the
rollback and its reason, finished. Pure: built from the report's timeline after the run, reading
each task's typed outcome (TaskOutcome: the operation, a ServeOutcome, the ReleaseMade), never its
message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterable, Sequence

from tritonops.logs.ecs import event
from tritonops.operations.release import ReleaseMade
from tritonops.playbook.host_task import TaskOutcome
from tritonops.results import HostResult
from tritonops.serving.outcome import ServeOutcome
from tritonops.weights.relay import WeightsArrival

SERVE_OPERATIONS = ("serve_release", "rollback_release")  # the tasks whose result is the health gate's


@dataclass(frozen=True)
class HostLabels:
    deployment: str
    model: str          # the Triton model names, comma-joined


def stamp(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}Z"


def host_events(host: str, labels: HostLabels, timeline: Sequence[tuple[float, HostResult]], *, command: str,
                who: str, started: float, finished: float) -> list[dict]:
    """The events of one host, oldest first. `timeline`: (when, result) of that host's phases and
    tasks as the run learned them."""
    release = ""
    for _, result in timeline:
        release = _release_of(result) or release

    def doc(at: float, level: str, message: str, **fields) -> dict:
        return event(stamp(at), host, labels.deployment, release, labels.model, level, message, **fields)

    docs = [doc(started, "info", f"{command} started by {who}", action=f"{command}-started")]
    for at, result in timeline:
        phase = result.task or "task"
        if isinstance(result.payload, TaskOutcome) and result.payload.operation in SERVE_OPERATIONS:
            docs.append(_gate(doc, at, result, result.payload.outcome(ServeOutcome)))
            continue
        level = "error" if result.failed else "info"
        docs.append(doc(at, level, f"{phase}: {result.status}" + (f": {result.msg}" if result.msg else ""),
                        action="phase", phase=phase, status=result.status, seconds=round(result.elapsed_s, 2),
                        **_weights_fields(result.payload)))
    failed = [r for _, r in timeline if r.failed]
    outcome = "failed" if failed else "ok"
    docs.append(doc(finished, "error" if failed else "info", f"{command} finished: {outcome}",
                    action=f"{command}-finished", status=outcome))
    return docs


def _weights_fields(payload) -> dict:
    """The weights phase's arrival (deploy.weights_phase): where the host's weights came from, and the bytes."""
    if not isinstance(payload, WeightsArrival):
        return {}
    return {"weights_model": payload.model_id, "weights_how": payload.how, "weights_source": payload.source or "",
            "bytes_received": payload.bytes_received, "bytes_from_controller": payload.bytes_from_controller}


def _release_of(result: HostResult) -> str | None:
    """The release a task made or started (the one serving again after a rollback), if it says."""
    if not isinstance(result.payload, TaskOutcome):
        return None
    served = result.payload.outcome(ServeOutcome)
    if served is not None:
        return served.serving_release
    made = result.payload.outcome(ReleaseMade)
    return made.release if made is not None else None


def _gate(doc, at: float, result: HostResult, served: ServeOutcome | None) -> dict:
    msg = result.msg or ""
    if result.status == "ok":
        return doc(at, "info", "gate: nothing to start, the release already serves", action="gate", status="unchanged")
    if not result.failed:
        said = f"release {served.release}: {served.gate_figures}" if served is not None else msg
        return doc(at, "info", f"gate passed: {said}", action="gate", status="passed",
                   seconds=round(result.elapsed_s, 2))
    if served is not None and served.status == "rolled_back":
        return doc(at, "error", f"gate failed, {msg}", action="rollback", status="rolled_back", reason=served.reason)
    return doc(at, "error", f"gate failed: {msg}", action="gate", status="failed", reason=msg)


def deploy_events(timeline: Iterable[tuple[float, HostResult]], labels: dict[str, HostLabels], *, command: str,
                  who: str, started: float, finished: float) -> dict[str, list[dict]]:
    """host -> its events, for every host in `labels`."""
    by_host: dict[str, list[tuple[float, HostResult]]] = {name: [] for name in labels}
    for at, result in timeline:
        if result.host in by_host:
            by_host[result.host].append((at, result))
    return {name: host_events(name, labels[name], sorted(by_host[name], key=lambda item: item[0]),
                              command=command, who=who, started=started, finished=finished)
            for name in labels}
