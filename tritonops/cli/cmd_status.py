"""`tritonops status`: per host and model, the current release, the container, health and metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.cmd_deploy import add_reading_options, reading_inputs, show_host_results
from tritonops.cli.output import hosts_then_doors, line, status_text, styled

if TYPE_CHECKING:
    from rich.console import Group
    from rich.table import Table

DOOR_STATES = {"UP": "green", "DRAIN": "yellow", "NOLB": "yellow", "MAINT": "yellow", "DOWN": "red"}


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "status", parents=[common], help=COMMANDS["status"],
        description="Per host and model: the current release, the container's state, uptime and restarts, "
                    "health and model readiness, vLLM's KV-cache size against the plan's, and from :8002/metrics "
                    "the request count and average request / queue / compute times. With balancers "
                    "(tritonops_balancers): per replica, its state in each door's HAProxy (UP, DRAIN, DOWN, MAINT), "
                    "its sessions and queue, read from HAProxy's runtime API over SSH.")
    add_reading_options(parser)
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.reading.status import status

    results = status(*reading_inputs(args))
    return show_host_results(out, args, results, "status", _tables)


def _ms(value) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _tables(results) -> Table | Group:
    """STATUS for the hosts and, when the run has balancers, DOOR for what their HAProxy sees."""
    return hosts_then_doors(results, _table, _door_table)


def _door_table(results) -> Table:
    from rich.table import Table

    table = Table(title="DOOR (HAProxy on each balancer)", title_justify="left")
    for column in ("balancer", "deployment", "door", "replica", "state", "sessions", "queue", "check"):
        table.add_column(column, justify="right" if column in ("sessions", "queue") else "left")
    for result in results:
        found = result.payload
        if found is None or not found.servers:
            table.add_row(result.host, line(status_text(result.status), ": ", result.msg), *("",) * 6)
            continue
        for backend in found.backends:
            for server in (s for s in found.servers if (s.deployment, s.door) == (backend.deployment, backend.door)):
                table.add_row(result.host, server.deployment, server.door, server.server,
                              styled(server.status, DOOR_STATES.get(server.state, "")), str(server.sessions),
                              str(server.queue), server.check or "-")
            table.add_row(result.host, backend.deployment, backend.door, "(backend)",
                          styled(backend.state, DOOR_STATES.get(backend.state, "")), str(backend.sessions),
                          str(backend.queue), "")  # leastconn with maxconn: requests wait here, for any replica
        if result.status != "ok":
            table.add_row(result.host, line(status_text(result.status), ": ", result.msg), *("",) * 6)
    return table


def _table(results) -> Table:
    from rich.table import Table

    table = Table(title="STATUS", title_justify="left")
    for column in ("host", "status", "release", "container", "uptime", "restarts", "health", "replicas", "logs",
                   "model", "ready", "KV tokens (plan / vLLM)", "requests", "avg ms (request / queue / infer)"):
        table.add_column(column)
    for result in results:
        found = result.payload
        if found is None:
            table.add_row(result.host, status_text(result.status), "", "", "", "", "", "", "", "", "", "", "",
                          result.msg)
            continue
        uptime = "-" if found.uptime_s is None else f"{found.uptime_s / 60:.0f} min"
        health = "ready" if found.ready else ("live" if found.live else "down")
        kv = f"{found.kv_predicted or 0:,} / {found.kv_reported or 0:,}" if found.kv_predicted else "-"
        if found.kv_shortfall is not None:
            kv = line(kv, styled(f" ({found.kv_shortfall:.1%} below the plan)", "yellow"))
        replicas = "1" if not found.replicas else \
            f"{sum(r.container == 'running' and r.ready for r in found.replicas)}/{len(found.replicas)} ready"
        rows = found.models or (None,)
        for index, model in enumerate(rows):
            head = (result.host, status_text(result.status), found.current or "-", found.container, uptime,
                    str(found.restarts), health, replicas, found.logs) if index == 0 else ("",) * 9
            if model is None:
                table.add_row(*head, "-", "-", kv, "-", "-")
                continue
            avg = model.metrics.average_ms
            table.add_row(*head, model.name, styled("yes", "green") if model.ready else styled("no", "red"), kv,
                          f"{model.metrics.requests:,}",
                          f"{_ms(avg.get('request'))} / {_ms(avg.get('queue'))} / {_ms(avg.get('compute_infer'))}")
        if found.cluster is not None:  # a pipeline's member: its Ray node, and the head's view of the members
            said = found.cluster.said()
            table.add_row(*("",) * 13, line("cluster: ", said if found.cluster.whole else styled(said, "red")))
    return table
