"""`tritonops status`: per host and model, the current release, the container, health and metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.cmd_deploy import add_reading_options, reading_inputs, show_host_results
from tritonops.cli.output import hosts_then_doors, line, said, status_text, styled, with_notes

if TYPE_CHECKING:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

DOOR_STATES = {"UP": "green", "DRAIN": "yellow", "NOLB": "yellow", "MAINT": "yellow", "DOWN": "red"}
CONTAINER_STATES = {"running": "green", "stopped": "yellow"}


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "status", parents=[common], help=COMMANDS["status"],
        description="Per host and model: the current release, the container's state, uptime and restarts, "
                    "health and model readiness, vLLM's KV-cache size against the plan's, and from :8002/metrics "
                    "the request count and average request / queue / compute times. With balancers "
                    "(tritonops_balancers): per replica, its state in each door's HAProxy (UP, DRAIN, DOWN, MAINT), "
                    "its sessions and queue, read from HAProxy's runtime API over SSH. The table is compact (the "
                    "release id whole, for rollback --to); -v adds each host's container and its models' times, "
                    "--json everything.")
    add_reading_options(parser)
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.reading.status import status

    results = status(*reading_inputs(args))
    return show_host_results(out, args, results, "status", lambda found: _tables(found, verbose=args.verbose > 0))


def _ms(value) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _tables(results, verbose: bool = False) -> Table | Group:
    """STATUS for the hosts and, when the run has balancers, DOOR for what their HAProxy sees."""
    return hosts_then_doors(results, lambda hosts: _table(hosts, verbose), _door_table)


def _door_table(results) -> Table | Group:
    from rich.table import Table

    table = Table(title="DOOR (HAProxy on each balancer)", title_justify="left")
    notes: list = []
    for column in ("balancer", "deployment", "door", "replica", "state", "sessions", "queue", "check"):
        table.add_column(column, justify="right" if column in ("sessions", "queue") else "left")
    for result in results:
        found = result.payload
        if found is None or not found.servers:
            table.add_row(result.host, status_text(result.status), *("",) * 6)
            notes.append(said(result))
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
            notes.append(said(result))
    return with_notes(table, notes)


def _table(results, verbose: bool = False) -> Table | Group:
    """STATUS: a row per host and model (green when ready), and under the table, what a host that does not simply
    serve said (a replica down or stopped, the KV cache below the plan, a pipeline's cluster). Compact, the release
    id whole (what `rollback --to` takes); -v adds a table of each host's container and its models' times."""
    from rich.console import Group
    from rich.table import Table

    table = Table(title="STATUS", title_justify="left")
    for column in ("host", "status", "release", "replicas", "model", "KV plan / vLLM", "requests", "prefix cache"):
        table.add_column(column, no_wrap=column in ("status", "release", "KV plan / vLLM"),
                         justify="right" if column in ("requests", "KV plan / vLLM", "prefix cache") else "left")
    notes = []
    for result in results:
        found = result.payload
        if found is None:
            table.add_row(styled(result.host), status_text(result.status), *("",) * 6)
            notes.append(said(result))
            continue
        if result.status != "ok" or found.stopped or found.kv_shortfall is not None or found.cluster is not None:
            notes.append(said(result))
        for index, model in enumerate(found.models or (None,)):
            head = (styled(result.host), status_text(result.status), styled(found.current or "-"),
                    _replicas(found)) if index == 0 else ("",) * 4
            kv = f"{found.kv_predicted or 0:,} / {found.kv_reported or 0:,}" if found.kv_predicted else "-"
            if found.kv_shortfall is not None:
                kv = styled(kv, "yellow")
            if model is None:
                table.add_row(*head, "-", kv, "-", "-")
                continue
            name = styled(model.name, "green") if model.ready else line(styled(model.name, "red"), " (not ready)")
            table.add_row(*head, name, kv, f"{model.metrics.requests:,}",
                          _hit_rates(model.metrics.prefix_hit_rate, found.replicas if index == 0 else ()))
    shown = with_notes(table, notes)
    return Group(shown, _details(results)) if verbose else shown


def _details(results) -> Table:
    """-v: each host's (first replica's) container, and each model's average request, queue and compute times."""
    from rich.table import Table

    table = Table(title="CONTAINERS", title_justify="left")
    for column in ("host", "container", "up", "restarts", "logs", "model", "ms request", "ms queue", "ms infer"):
        table.add_column(column, justify="right" if column in ("up", "restarts") or column.startswith("ms")
                         else "left")
    for result in results:
        found = result.payload
        if found is None:
            continue
        for index, model in enumerate(found.models or (None,)):
            head = (styled(result.host), styled(found.container, CONTAINER_STATES.get(found.container, "red")),
                    "-" if found.uptime_s is None else f"{found.uptime_s / 60:.0f} min",
                    styled(str(found.restarts), "yellow") if found.restarts else "0",
                    found.logs) if index == 0 else ("",) * 5
            avg = model.metrics.average_ms if model is not None else {}
            table.add_row(*head, model.name if model is not None else "-", _ms(avg.get("request")),
                          _ms(avg.get("queue")), _ms(avg.get("compute_infer")))
    return table


def _hit_rates(rate: float | None, replicas) -> str:
    """The share of prompt tokens vLLM found in its prefix cache; on a host's first row, each replica's (r0, r1...)."""
    text = "-" if rate is None else f"{rate:.0%} hits"
    each = [f"r{r.index} {r.prefix_hit_rate:.0%}" for r in replicas if r.prefix_hit_rate is not None]
    return f"{text} ({', '.join(each)})" if len(each) > 1 else text


def _replicas(found) -> Text:
    """How many replicas serve, of how many, and how many were stopped (`tritonops stop`); one container: its
    health."""
    if not found.replicas:
        if found.stopped:
            return styled("stopped", "yellow")
        return styled("ready", "green") if found.ready else styled("live" if found.live else "down", "red")
    ready = sum(r.serving for r in found.replicas)
    said = line(styled(f"{ready}/{len(found.replicas)} ready", "green" if found.serving else "red"))
    if found.stopped:
        said.append(f", {len(found.stopped)} stopped", "yellow")
    return said
