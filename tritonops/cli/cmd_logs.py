"""`tritonops logs`: the Triton container's logs of the selected hosts, each line after its host,
read through SSH (for teams without a collector)."""

from __future__ import annotations

from tritonops.cli.commands import COMMANDS
from tritonops.cli.cmd_deploy import add_reading_options, reading_inputs
from tritonops.cli.output import line, status_text
from tritonops.exit_codes import exit_code_of


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "logs", parents=[common], help=COMMANDS["logs"],
        description="Shows the logs of each selected host's Triton container (the deployment's), every line "
                    "after its host: `time level source message` for tritonops' log format, other lines as "
                    "they are. Read with `docker logs` on the host, whatever the logging driver.")
    parser.add_argument("--tail", "-n", type=int, default=100, metavar="N", help="last N lines per host (default 100)")
    parser.add_argument("--since", metavar="WHEN", help="only lines since: 10m, 2h, an RFC 3339 time, a Unix time")
    parser.add_argument("--follow", "-F", action="store_true", help="keep printing new lines until Ctrl-C (which ends it: exit 0, or 2/4 if a host failed)")
    parser.add_argument("--replica", type=int, default=0, metavar="I",
                        help="the logs of replica I of each host (default 0; tritonops_replicas)")
    add_reading_options(parser)
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.logs.reading import replica_value, since_value, tail_value
    from tritonops.reading.logs import read_logs

    inputs, options = reading_inputs(args)
    statuses = set()
    rounds = read_logs(inputs, options, tail=tail_value(args.tail), since=since_value(args.since),
                       follow=args.follow, replica=replica_value(args.replica))
    try:
        for results in rounds:
            statuses.update(result.status for result in results)
            _show_round(out, args, results)
    except KeyboardInterrupt:
        if not args.follow:
            raise  # a plain read cut short: interrupted (99, cli/main.py)
        # Ctrl-C is how a follow ends: nothing to add, the code of what was read
    finally:
        rounds.close()  # the hosts' sessions, whichever way the loop ended
    return exit_code_of(statuses)


def _show_round(out, args, results) -> None:
    if args.json:  # one result document per round, on one line (JSON Lines with --follow)
        out.json_line(_round_json(results))
        return
    width = max((len(r.host) for r in results), default=0)
    for result in results:
        if not result.ok:
            out.print(line(f"{result.host:<{width}} | ", status_text(result.status), f": {result.msg}"))
            continue
        for entry in result.payload:
            out.text_line(f"{result.host:<{width}} | {entry.shown}")


def _round_json(results) -> dict:
    """A round's result document: each host's payload its new lines (received, the log's fields)."""
    from tritonops.cli.result_json import document
    from tritonops.logs.ecs import parsed

    def lines(result):
        return {"lines": [{"received": entry.received, "log": parsed(entry.text) or entry.text}
                          for entry in result.payload or ()]}

    return document("logs", results, payload=lines)
