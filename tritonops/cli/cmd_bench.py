"""`tritonops bench`: aiperf against the deployed fleet (issue #24), a table per concurrency level, the exports
and plots kept per deployment and release, the figures marked that got worse against another release."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.cmd_deploy import add_reading_options, reading_inputs

if TYPE_CHECKING:
    from rich.table import Table

COLUMNS = (("output tok/s", "output_tokens_per_s"), ("req/s", "requests_per_s"),
           ("TTFT p50", "ttft_p50_ms"), ("TTFT p99", "ttft_p99_ms"), ("ITL p50", "itl_p50_ms"),
           ("ITL p99", "itl_p99_ms"), ("e2e p50", "e2e_p50_ms"), ("e2e p99", "e2e_p99_ms"))


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "bench", parents=[common], help=COMMANDS["bench"],
        description="Runs aiperf from this machine against one deployment: through its balancer's door when it has "
                    "one, else round robin over every replica its current releases placed (KServe "
                    "generate_stream). Per concurrency level: requests ok / failed, output tokens/s, requests/s, "
                    "time to first token, inter-token and end-to-end latency (p50 / p99, ms), and Triton's queue "
                    "and compute time per request from the replicas' metrics. aiperf's exports and the summary are "
                    "kept under $TRITONOPS_BENCH_DIR (default ~/.local/state/tritonops/bench/<deployment>/"
                    "<release>/), with PNG plots; figures more than --threshold worse than the previous release "
                    "benched are marked. aiperf runs from its own venv (scripts/install-aiperf.sh).")
    add_reading_options(parser)
    parser.add_argument("--model", default="", metavar="M", help="the Triton model (default: the one served)")
    parser.add_argument("--concurrency", default="1,8,32,128", metavar="N,N,...",
                        help="concurrency levels, one aiperf run each (default 1,8,32,128)")
    parser.add_argument("--request-rate", type=float, default=None, metavar="R",
                        help="requests per second (constant arrivals), capped by the concurrency")
    parser.add_argument("--input-tokens", type=int, default=128, metavar="N",
                        help="prompt tokens (default 128); with --workload shared-prefix, each request's own after "
                             "its tenant's prefix")
    parser.add_argument("--workload", choices=("random", "shared-prefix"), default="random",
                        help="random prompts (default), or shared-prefix: --tenants prompts of --prefix-tokens each, "
                             "one of them before each request's own tokens, as chat with system prompts, RAG and "
                             "agents send (the prefix caches' hit rate is shown)")
    parser.add_argument("--tenants", type=int, default=None, metavar="P",
                        help="shared-prefix: how many distinct prefixes (default 16)")
    parser.add_argument("--prefix-tokens", type=int, default=None, metavar="L",
                        help="shared-prefix: tokens of each prefix (default 2048)")
    parser.add_argument("--output-tokens", type=int, default=128, metavar="N",
                        help="generated tokens per request (default 128)")
    bound = parser.add_mutually_exclusive_group()
    bound.add_argument("--requests", type=int, default=None, metavar="N",
                       help="requests per level (default 8 per concurrent stream, at least 16)")
    bound.add_argument("--duration", type=float, default=None, metavar="S", help="seconds per level instead")
    parser.add_argument("--through", choices=("balancer", "replicas"), default=None,
                        help="where requests go (default: the balancer when the deployment has one)")
    parser.add_argument("--compare", default="previous", metavar="RELEASE",
                        help="the release to compare with: 'previous' (default: the last other release benched), "
                             "a release id, or 'none'")
    parser.add_argument("--threshold", type=float, default=0.10, metavar="FRACTION",
                        help="how much worse a figure may be before it is marked (default 0.10)")
    parser.add_argument("--tokenizer", default=None, metavar="FOLDER",
                        help="a local folder with the model's tokenizer.json and tokenizer_config.json (default: "
                             "the controller's copy of the model, else fetched once from a serving host)")
    parser.add_argument("--no-plots", action="store_true", help="no PNG plots")
    parser.set_defaults(run=run)


def run(args, out) -> int:
    import os

    from tritonops.bench.flow import BenchRequest, run_bench
    from tritonops.errors import InputError
    from tritonops.bench.plan import Workload, parse_levels

    if not 0 < args.threshold < 10:
        raise InputError(f"{args.threshold:g} is not a fraction above 0 (0.10: 10 %)", "--threshold")
    if args.tokenizer and not os.path.isabs(args.tokenizer):
        raise InputError(f"{args.tokenizer!r} is not an absolute path", "--tokenizer")
    shared = args.workload == "shared-prefix"
    if not shared and (args.tenants is not None or args.prefix_tokens is not None):
        raise InputError("--tenants and --prefix-tokens shape the shared-prefix workload: add --workload "
                         "shared-prefix", "--tenants" if args.tenants is not None else "--prefix-tokens")
    workload = Workload(model=args.model, concurrency=parse_levels(args.concurrency), request_rate=args.request_rate,
                        input_tokens=args.input_tokens, output_tokens=args.output_tokens, requests=args.requests,
                        duration_s=args.duration,
                        tenants=(16 if args.tenants is None else args.tenants) if shared else 0,
                        prefix_tokens=(2048 if args.prefix_tokens is None else args.prefix_tokens) if shared else 0)
    request = BenchRequest(workload, args.through, None if args.compare == "none" else args.compare,
                           args.threshold, args.tokenizer, plots=not args.no_plots)
    inputs, options = reading_inputs(args)
    if not args.json:
        out.info(f"bench: {', '.join(f'c{c}' for c in workload.concurrency)} with aiperf; this takes a while")
    report = run_bench(inputs, options, request)
    failed = any(level.requests_failed or not level.requests_ok for level in report.summary.levels)
    code = 2 if failed else 0
    if args.json:
        out.json(_document(report, code))
        return code
    out.print(_table(report))
    if report.comparison is None and request.compare_to:
        from tritonops.bench.results import workload_said

        out.print(f"compared with: nothing (no other release of {report.summary.deployment} benched so yet: "
                  f"{workload_said(report.summary)})")
    elif report.comparison is not None:
        worse = report.comparison.regressions
        out.print(f"compared with release {report.comparison.against}: "
                  + (f"{len(worse)} figure(s) worse by more than {report.comparison.threshold:.0%} (marked !)"
                     if worse else f"nothing worse by more than {report.comparison.threshold:.0%}"))
    for level in report.summary.levels:
        for error in level.errors:
            out.print(f"c{level.concurrency}: {error}")
    out.print(f"kept: {report.run_dir}")
    for path in report.plots:
        out.print(f"plot: {path}")
    return code


def _document(report, code: int) -> dict:
    from tritonops.cli.result_json import document
    from tritonops.results import HostResult

    summary = report.summary
    rows = [HostResult(name, "ok" if not any(l.requests_failed for l in summary.levels) else "failed",
                       f"benched through {summary.through}", task="bench") for name in summary.endpoints]
    comparison = None
    if report.comparison is not None:
        comparison = {"against": report.comparison.against, "threshold": report.comparison.threshold,
                      "worse": [vars(c) for c in report.comparison.regressions],
                      "changes": [vars(c) for c in report.comparison.changes]}
    return document("bench", rows, exit_code=code, bench=summary.to_json(), kept=str(report.run_dir),
                    plots=[str(p) for p in report.plots], comparison=comparison)


def _number(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _table(report) -> Table:
    from rich.table import Table

    summary = report.summary
    title = (f"BENCH {summary.deployment} release {summary.release} model {summary.model} through "
             f"{summary.through} ({', '.join(summary.endpoints)}); latencies in ms")
    table = Table(title=title, title_justify="left")
    prefix = any(level.server and level.server.prefix_hit_rate is not None for level in summary.levels)
    for column in ("concurrency", "requests ok / failed", *(name for name, _ in COLUMNS), "queue", "compute",
                   *(("prefix hits",) if prefix else ())):
        table.add_column(column, justify="right")
    comparison = report.comparison
    for level in summary.levels:
        cells = []
        for _, figure in COLUMNS:
            text = _number(level.figure(figure))
            change = comparison.change(level.concurrency, figure) if comparison else None
            if change is not None and change.worse:
                text = f"! {text} ({change.ratio - 1:+.0%})"
            cells.append(text)
        server = level.server
        hits = "-" if server is None or server.prefix_hit_rate is None else f"{server.prefix_hit_rate:.0%}"
        table.add_row(str(level.concurrency), f"{level.requests_ok:,} / {level.requests_failed:,}", *cells,
                      _number(server.queue_ms) if server else "-", _number(server.compute_ms) if server else "-",
                      *((hits,) if prefix else ()))
    return table
