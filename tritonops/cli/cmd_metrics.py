"""`tritonops metrics`: per host and model, the figures on Triton's metrics port, read through SSH."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.cmd_deploy import add_reading_options, reading_inputs, show_host_results
from tritonops.cli.output import hosts_then_doors, said, status_text, with_notes

if TYPE_CHECKING:
    from rich.console import Group
    from rich.table import Table

TIMES = ("queue", "compute_input", "compute_infer", "compute_output", "request")


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "metrics", parents=[common], help=COMMANDS["metrics"],
        description="Reads each host's Triton metrics page (tritonops_metrics_port, default 8002) on the host "
                    "through SSH and shows per model: requests (success / failure), the average queue, "
                    "compute input / infer / output and whole-request time per request in ms, and where the "
                    "engine reports them vLLM's KV-cache usage and running / waiting requests. A host whose "
                    "port is closed or answers something else is listed with its problem; exit 2 then. With balancers "
                    "(tritonops_balancers): per door, its requests since HAProxy last loaded, the requests of the last "
                    "second, its answers by class and its refusals by reason, and HAProxy's queue, from HAProxy's "
                    "show stat over SSH; a door routing by prompt prefix, how many of the requests its log holds "
                    "reached their key's replica and how they split. With tritonops' backend, each host's and "
                    "replica's prefix-cache hit rate.")
    add_reading_options(parser)
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.reading.metrics import fetch_metrics

    results = fetch_metrics(*reading_inputs(args))
    return show_host_results(out, args, results, "metrics", _tables)


def _ms(value) -> str:
    return "-" if value is None else f"{value:,.1f}" if value >= 10 else f"{value:.2f}"


def _tables(results) -> Table | Group:
    """METRICS for the hosts and, when the run has balancers, DOOR for their HAProxy's counts."""
    return hosts_then_doors(results, _table, _door_table)


def _door_table(results) -> Table | Group:
    from rich.table import Table

    table = Table(title="DOOR (HAProxy on each balancer, since it last loaded)", title_justify="left")
    notes: list = []
    for column in ("balancer", "deployment", "door", "requests", "last s", "2xx / 4xx / 5xx",
                   "403/401 refused", "503 no_replica/queue_full", "503 queue_timeout",
                   "replica 5xx", "queue now / max", "queue ms avg / max", "UP"):
        table.add_column(column, justify="left" if column in ("balancer", "deployment", "door") else "right")
    for result in results:
        figures = result.payload
        if figures is None or not figures.doors:
            table.add_row(result.host, status_text(result.status), *("",) * 11)
            notes.append(said(result))
            continue
        for index, door in enumerate(figures.doors):
            http = door.door == "http"  # over gRPC the door's refusals are 200s: only their sum is known
            table.add_row(
                result.host if index == 0 else "", door.deployment, door.door, f"{door.requests:,}",
                "-" if door.rate is None else f"{door.rate:,}",
                f"{door.answered_2xx:,} / {door.answered_4xx:,} / {door.answered_5xx:,}",
                f"{door.refused_4xx:,}" if http else f"{door.refused:,} (every reason)",
                f"{door.refused_503:,}" if http else "-", f"{door.queue_timeouts:,}", f"{door.replica_5xx:,}",
                f"{door.queue:,} / {'-' if door.queue_max is None else f'{door.queue_max:,}'}",
                f"{'-' if door.queue_ms is None else f'{door.queue_ms:,}'} / "
                f"{'-' if door.queue_max_ms is None else f'{door.queue_max_ms:,}'}",
                f"{door.replicas_up}/{door.replicas}")
            if door.routing is not None:  # a door routing by prompt prefix: what its request log says
                notes.append(f"{result.host} {door.deployment} {door.door}, by prompt prefix (the request log): "
                             f"{door.routing.said()}")
    return with_notes(table, notes)


def _hits(model) -> str:
    """The share of prompt tokens vLLM found in its prefix cache (each replica's goes in a note)."""
    return "-" if model.prefix_hit_rate is None else f"{model.prefix_hit_rate:.0%}"


def _replica_hits(host: str, model) -> str | None:
    """A note with each replica's hit rate, where a host has several."""
    if not model.replica_hit_rates:
        return None
    each = ", ".join(f"r{i} {'-' if rate is None else f'{rate:.0%}'}" for i, rate in enumerate(model.replica_hit_rates))
    return f"{host} {model.model}: prefix-cache hits per replica: {each}"


def _table(results) -> Table | Group:
    from rich.table import Table

    table = Table(title="METRICS (average ms per request)", title_justify="left")
    notes: list = []
    for column in ("host", "model", "requests ok / failed", "queue", "input", "infer", "output", "request",
                   "KV cache", "running / waiting", "prefix hits"):
        # a host's and a model's name whole: the figures' columns wrap their headers instead
        table.add_column(column, justify="left" if column in ("host", "model") else "right",
                         no_wrap=column in ("host", "model"))
    for result in results:
        figures = result.payload
        if figures is None:
            table.add_row(result.host, status_text(result.status), *("",) * 9)
            notes.append(said(result))
            continue
        if not figures.models:
            table.add_row(result.host, "-", "no model", *("",) * 8)
        for index, model in enumerate(figures.models):
            kv = "-" if model.kv_cache_usage is None else f"{model.kv_cache_usage:.0%}"
            engine = "-" if model.running is None and model.waiting is None else \
                f"{model.running if model.running is not None else '-'} / {model.waiting if model.waiting is not None else '-'}"
            table.add_row(result.host if index == 0 else "", model.model, f"{model.requests:,} / {model.failures:,}",
                          *(_ms(model.average_ms.get(name)) for name in TIMES), kv, engine, _hits(model))
            note = _replica_hits(result.host, model)
            if note:
                notes.append(note)
    return with_notes(table, notes)
