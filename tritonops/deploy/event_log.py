"""Where a deploy's events go: the controller's audit log (always, JSON lines, 0600) and, for hosts
whose Triton logs are shipped, the same collector by the same Docker logging driver — a short-lived
container on the host prints them (`cat`), so they take exactly the path the Triton lines take.
A collector that cannot take them is said in the result, never a failure of the deploy.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from tritonops.deploy.events import HostLabels, deploy_events, host_events
from tritonops.deploy.run import DeployOptions, DeployReport, who
from tritonops.logs.shipping import LogShipping, log_argv, shipping_of
from tritonops.results import HostResult
from tritonops.transport.sessions import HostSession, SessionPool
from tritonops.values.containers import container_name
from tritonops.values.user_dirs import user_path

EVENTS_LABEL = "tritonops.events"  # the events container's label (not tritonops.deployment: it is not Triton)


def default_audit_log() -> Path:
    """$TRITONOPS_AUDIT_LOG, else $XDG_STATE_HOME/tritonops/audit.log (~/.local/state/...)."""
    return user_path("state", "audit.log", override="TRITONOPS_AUDIT_LOG")


def append_audit(path: Path, docs: Iterable[Mapping[str, Any]]) -> None:
    """Append one JSON line per event; the file is made 0600 (its folder 0700) when new."""
    lines = "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs)
    if not lines:
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        handle.write(lines)


def audit_results(path: Path, results: Iterable[HostResult], deployments: Mapping[str, tuple[str, str]], *,
                  command: str, started: float, finished: float) -> None:
    """A command's results that are not a playbook run's (stop, start, prune, door keys, lock release) into the
    audit log at `path`: each host's as its events (started, its outcome, finished) under its deployment;
    `deployments`: host -> (root, deployment) as deployment_of reads them."""
    append_audit(path, (doc for result in results for doc in host_events(
        result.host, HostLabels(deployments[result.host][1], ""), [(finished, result)],
        command=command, who=who(), started=started, finished=finished)))


def events_argv(shipping: LogShipping, image_id: str, deployment: str) -> tuple[str, ...]:
    """A container that prints its standard input through the host's logging driver, then goes."""
    return ("docker", "run", "--rm", "--interactive", "--network", "none", "--label", f"{EVENTS_LABEL}={deployment}",
            *log_argv(shipping), "--entrypoint", "cat", image_id)


def events_phase(pool: SessionPool, hosts, deployments: dict[str, tuple[str, str]], report: DeployReport,
                 options: DeployOptions, *, who: str, started: float, finished: float,
                 on_phase: Callable[[HostResult], None]) -> None:
    """The run's events per host into `report.events`, the audit log, and the hosts' collectors."""
    labels = {host.name: HostLabels(deployments[host.name][1], ",".join(_model_names(report, host.name)))
              for host in hosts}
    report.events = deploy_events(report.timeline, labels, command=options.command, who=who,
                                  started=started, finished=finished)
    if options.audit_log is not None:
        append_audit(options.audit_log, (doc for docs in report.events.values() for doc in docs))
    shipped = {}
    for host in hosts:
        shipping = shipping_of(host.vars, deployments[host.name][1])
        if shipping is not None and shipping.ships and host.name not in pool.unreachable:
            image = report.host_facts.get(host.name, {}).get("tritonops_deploy", {}).get("image", {}).get("id")
            shipped[host.name] = (shipping, image or None)
    results = pool.run(lambda session: ship_events(session, *shipped[session.name], deployments[session.name][1],
                                                   report.events[session.name]), list(shipped), task="events")
    for result in results:  # on the run's event stream, as every phase's results
        on_phase(result)


def _model_names(report: DeployReport, host: str) -> list[str]:
    plan = report.plans.get(host)
    return sorted({instance.name for instance in plan.models}) if plan is not None else []


def ship_events(session: HostSession, shipping: LogShipping, image_id: str | None, deployment: str,
                docs: list[dict]) -> HostResult:
    """`image_id` None: the image of the deployment's Triton container (a rollback)."""
    if image_id is None:
        found = session.transport.run(shlex.join(("docker", "inspect", "--format", "{{.Image}}",
                                                  container_name(deployment))), timeout=30)
        image_id = found.stdout.strip() if found.ok else ""
        if not image_id:
            return HostResult(session.name, "ok", "log shipping degraded: deploy events not shipped (no image to "
                              "run them through; they are in the controller's audit log)", task="events")
    body = "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs).encode()
    result = session.transport.run(shlex.join(events_argv(shipping, image_id, deployment)), stdin=body, timeout=60)
    where = f"{shipping.driver} {shipping.collector or ''}".strip()
    if result.ok:
        return HostResult(session.name, "ok", f"{len(docs)} deploy events shipped ({where})", task="events")
    return HostResult(session.name, "ok", f"log shipping degraded: deploy events not shipped to {where}: "
                      f"{result.tail(1)} (they are in the controller's audit log)", task="events")
