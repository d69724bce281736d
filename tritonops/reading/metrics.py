"""`tritonops metrics`: each host's :8002/metrics page read on the host through its SSH session (no
other network path to the fleet is assumed), turned into per-model figures (metrics/figures.py).
A host whose port is closed, answers an HTTP error or something that is not Triton's metrics gets a
failed result saying so in one line; the others are unaffected."""

from __future__ import annotations

from tritonops.metrics.fetch import fetch_query, local_address, page_verdict
from tritonops.metrics.figures import HostFigures, MetricsPageError
from tritonops.facts.query_program import read_facts
from tritonops.planning.entries import host_where
from tritonops.playbook.inputs import RunInputs
from tritonops.reading.sessions import ReadOptions, read_each
from tritonops.results import GroupResult, HostResult
from tritonops.transport.sessions import HostSession
from tritonops.values.numbers import whole_number


def fetch_metrics(inputs: RunInputs, options: ReadOptions) -> GroupResult[HostFigures]:
    """One result per selected host: ok with HostFigures, or failed with the one-line problem."""
    queries = {}
    for host in inputs.hosts:  # every value checked before any host is contacted
        port = whole_number(host.vars.get("tritonops_metrics_port", 8002), "tritonops_metrics_port",
                            host_where(host, "tritonops_metrics_port"), minimum=1, maximum=65535)
        address = local_address(str(host.vars.get("tritonops_bind_address") or ""),
                                host_where(host, "tritonops_bind_address"))
        queries[host.name] = (port, fetch_query(address, port))

    def phase(session: HostSession) -> HostResult:
        port, query = queries[session.name]
        result = read_facts(session.transport, [query]).command(query.argv)
        if not result.ok:
            last = (result.stderr.strip().splitlines() or [f"exit {result.exit_code}"])[-1]
            return HostResult(session.name, "failed", f"could not run python3 on the host: {last[:200]}")
        try:
            figures = page_verdict(port, result.stdout)
        except MetricsPageError as err:
            return HostResult(session.name, "failed", str(err))
        requests = sum(model.requests for model in figures.models)
        return HostResult(session.name, "ok", f"{len(figures.models)} model(s), {requests:,} requests", figures)

    return read_each(inputs, options, phase, "metrics")
