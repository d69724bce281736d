"""`tritonops status`: per host, what runs and how it does (tritonops.serving.status). Read-only."""

from __future__ import annotations

import posixpath

from tritonops.logs.shipping import shipping_of
from tritonops.facts.query_program import read_facts
from tritonops.planning.deployment import deployment_of
from tritonops.playbook.inputs import RunInputs
from tritonops.reading.sessions import ReadOptions, read_each
from tritonops.results import GroupResult, HostResult
from tritonops.serving.releases import parse_releases, releases_query
from tritonops.serving.status import health_query, host_status, parse_health, utc_now
from tritonops.serving.verdict import kv_warning
from tritonops.transport.sessions import HostSession


def status(inputs: RunInputs, options: ReadOptions) -> GroupResult:
    by_name = {host.name: host for host in inputs.hosts}

    def phase(session: HostSession) -> HostResult:
        host = by_name[session.name]
        root, deployment = deployment_of(host)
        query = releases_query(posixpath.join(root, deployment), deployment)
        deployed = parse_releases(read_facts(session.transport, [query]).command(query.argv).stdout)
        release = deployed.release(deployed.current) if deployed.current else None
        models = tuple((release.serve or {}).get("models", ())) if release else ()
        probe = health_query(int(host.vars.get("tritonops_http_port", 8000)),
                             int(host.vars.get("tritonops_metrics_port", 8002)), models)
        health = parse_health(read_facts(session.transport, [probe]).command(probe.argv).stdout)
        found = host_status(session.name, deployed, health, utc_now(), shipping_of(host.vars, deployment))
        serving = found.container == "running" and found.ready
        said = "serving" if serving else f"container {found.container}, ready {found.ready}"
        if found.kv_shortfall is not None:  # a warning: it serves, with less concurrency than the plan promised
            said += "; " + kv_warning(found.kv_predicted, found.kv_reported, found.kv_shortfall)
        return HostResult(session.name, "ok" if serving else "failed", said, found)

    return read_each(inputs, options, phase, "status")
