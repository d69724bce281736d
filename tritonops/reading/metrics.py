"""`tritonops metrics`: each host's :8002/metrics page read on the host through its SSH session (no
other network path to the fleet is assumed), turned into per-model figures (metrics/figures.py).
A host whose current release has several replicas (issue #22) is read on each replica's metrics port and
counted as one (metrics.figures.host_figures). A host whose port is closed, answers an HTTP error or
something that is not Triton's metrics gets a failed result saying so in one line; the others are
unaffected. Each balancer of the run (tritonops_balancers) gets a result of task "door": its doors' request counts
and refusals by reason, from HAProxy's `show stat` through the runtime program (balancer.door_figures)."""

from __future__ import annotations

import posixpath

from tritonops.door.figures import BalancerFigures, door_figures
from tritonops.errors import TritonopsError
from tritonops.metrics.fetch import fetch_query, local_address, pages_verdict
from tritonops.metrics.figures import HostFigures, MetricsPageError
from tritonops.facts.query_program import read_facts
from tritonops.planning.bind import BIND_VAR, replica_bind, serving_address
from tritonops.planning.deployment import deployment_of
from tritonops.planning.entries import host_where
from tritonops.playbook.inputs import RunInputs
from tritonops.reading.door import door_rows_and_log
from tritonops.reading.sessions import ReadOptions, reading_pool
from tritonops.results import GroupResult, HostResult
from tritonops.modes.choice import host_ports, serving_mode
from tritonops.serving.releases import parse_releases, releases_query
from tritonops.transport.sessions import HostSession
from tritonops.values.numbers import whole_number


def fetch_metrics(inputs: RunInputs, options: ReadOptions) -> GroupResult[HostFigures]:
    """One result per selected host: ok with HostFigures, or failed with the one-line problem."""
    queries, addresses, releases_queries, ports_of = {}, {}, {}, {}
    for host in inputs.hosts:  # every value checked before any host is contacted
        port = whole_number(host.vars.get("tritonops_metrics_port", 8002), "tritonops_metrics_port",
                            host_where(host, "tritonops_metrics_port"), minimum=1, maximum=65535)
        bind = replica_bind(host, inputs.behind_balancer)  # for a release that recorded none (serve.bind)
        address = local_address(bind, host_where(host, BIND_VAR))
        queries[host.name] = (port, fetch_query(address, port))
        addresses[host.name] = bind
        root, deployment = deployment_of(host)  # the current release's replicas: each one's metrics port
        releases_queries[host.name] = releases_query(posixpath.join(root, deployment), deployment)
        ports_of[host.name] = host_ports(host.vars)

    def phase(session: HostSession) -> HostResult:
        port, query = queries[session.name]
        planned, releases = addresses[session.name], releases_queries[session.name]
        read = read_facts(session.transport, [releases, query])  # the host's port with the releases: one trip
        try:
            deployed = parse_releases(read.command(releases.argv).stdout, ports_of[session.name])
        except TritonopsError:  # no release to read: the host's one metrics port, as it answers
            deployed = None
        release = deployed.current_release if deployed else None
        # each replica's metrics page, at the port its serving mode says (kserve's :8002; the openai mode's OpenAI
        # port, where the frontend serves /metrics), as the release recorded its ports
        mode = release.mode if release else serving_mode(None)
        ports = [mode.endpoints(r.ports)[mode.metrics().port] for r in release.serve.replicas] \
            if release and release.serve else []
        # where the replicas answer: the bind their release recorded, else the variables' (read with the releases)
        address = serving_address(release.bind if release else None, planned)
        fetches = [(p, fetch_query(address, p)) for p in (ports if ports else [port])]
        more = [q for _, q in fetches if q.argv != query.argv]  # other ports or address, read once they are known
        others = read_facts(session.transport, more) if more else read
        answers = []
        for p, q in fetches:
            result = (read if q.argv == query.argv else others).command(q.argv)
            if not result.ok:
                last = (result.stderr.strip().splitlines() or [f"exit {result.exit_code}"])[-1]
                return HostResult(session.name, "failed", f"could not run python3 on the host: {last[:200]}")
            answers.append((p, result.stdout))
        try:
            figures = pages_verdict(answers)
        except MetricsPageError as err:
            return HostResult(session.name, "failed", str(err))
        requests = sum(model.requests for model in figures.models)
        replicas = f" over {len(answers)} replicas" if len(answers) > 1 else ""
        return HostResult(session.name, "ok", f"{len(figures.models)} model(s), {requests:,} requests{replicas}",
                          figures)

    deployments = {deployment_of(host)[1] for host in inputs.hosts}

    def door(session: HostSession) -> HostResult[BalancerFigures]:
        rows, logged = door_rows_and_log(session)
        found = door_figures(rows, deployments or None, logged)
        return HostResult(session.name, "ok" if found.doors else "failed", found.summary(), found, task="door")

    with reading_pool(inputs, options, balancers=True) as pool:
        hosts = pool.run(phase, [host.name for host in inputs.hosts], task="metrics")
        doors = pool.run(door, [balancer.name for balancer in inputs.balancers], task="door")
    return GroupResult.of(list(hosts) + list(doors))
