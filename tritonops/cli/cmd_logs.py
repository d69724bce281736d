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
    parser.add_argument("--follow", "-F", action="store_true", help="keep printing new lines until interrupted")
    add_reading_options(parser)
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.logs.ecs import parsed
    from tritonops.reading.logs import read_logs
    from tritonops.logs.reading import since_value, tail_value

    inputs, options = reading_inputs(args)
    statuses = set()
    for results in read_logs(inputs, options, tail=tail_value(args.tail),
                             since=since_value(args.since), follow=args.follow):
        width = max((len(r.host) for r in results), default=0)
        for result in results:
            statuses.add(result.status)
            if not result.ok:
                if args.json:
                    out.json_line({"host": result.host, "status": result.status, "msg": result.msg})
                else:
                    out.print(line(f"{result.host:<{width}} | ", status_text(result.status), f": {result.msg}"))
                continue
            for entry in result.payload:
                if args.json:
                    out.json_line({"host": result.host, "received": entry.received,
                                   "log": parsed(entry.text) or entry.text})
                else:
                    out.text_line(f"{result.host:<{width}} | {entry.shown}")
    return exit_code_of(statuses)
