"""A deploy's (or rollback's) own events per host, in the log format of the containers' lines
(logs.ecs): started, each phase and task with its outcome, the health gate's result or the
rollback and its reason, finished. Pure: built from the report's timeline after the run.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Iterable, Sequence

from tritonops.logs.ecs import event
from tritonops.results import HostResult

RELEASE_ID = re.compile(r"\b(\d{8}T\d{6}Z-[0-9a-f]{8})\b")
GATE_NOTE = re.compile(r"\(gate passed: (.*?)(?:; log shipping degraded: .*)?\)$")
SERVE_TASKS = ("Triton serves",)  # the tasks whose result is the health gate's


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
        found = RELEASE_ID.findall(result.msg or "")
        release = found[-1] if found else release

    def doc(at: float, level: str, message: str, **fields) -> dict:
        return event(stamp(at), host, labels.deployment, release, labels.model, level, message, **fields)

    docs = [doc(started, "info", f"{command} started by {who}", action=f"{command}-started")]
    for at, result in timeline:
        phase = result.task or "task"
        if phase.startswith(SERVE_TASKS):
            docs.append(_gate(doc, at, result, command))
            continue
        level = "error" if result.failed else "info"
        docs.append(doc(at, level, f"{phase}: {result.status}" + (f": {result.msg}" if result.msg else ""),
                        action="phase", phase=phase, status=result.status, seconds=round(result.elapsed_s, 2)))
    failed = [r for _, r in timeline if r.failed]
    outcome = "failed" if failed else "ok"
    docs.append(doc(finished, "error" if failed else "info", f"{command} finished: {outcome}",
                    action=f"{command}-finished", status=outcome))
    return docs


def _gate(doc, at: float, result: HostResult, command: str) -> dict:
    msg = result.msg or ""
    if result.status == "ok":
        return doc(at, "info", "gate: nothing to start, the release already serves", action="gate", status="unchanged")
    if not result.failed:
        found = GATE_NOTE.search(msg)
        release = RELEASE_ID.findall(msg)
        said = f"release {release[-1]}: {found.group(1)}" if found and release else msg
        return doc(at, "info", f"gate passed: {said}", action="gate", status="passed",
                   seconds=round(result.elapsed_s, 2))
    if msg.startswith("rolled back: "):
        return doc(at, "error", f"gate failed, {msg}", action="rollback", status="rolled_back",
                   reason=msg[len("rolled back: "):].split(" (release ")[0])
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
