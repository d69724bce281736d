"""`tritonops logs`: the Triton container's logs of the selected hosts, each line after its host,
read through SSH (for teams without a collector)."""

from __future__ import annotations

from tritonops.cli.cmd_deploy import default_playbook, default_roles_path
from tritonops.cli.output import line, status_text
from tritonops.cli.selection import add_host_key_option, inventory_paths


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "logs", parents=[common], help="the Triton container's logs of each host, through SSH",
        description="Shows the logs of each selected host's Triton container (the deployment's), every line "
                    "after its host: `time level source message` for tritonops' log format, other lines as "
                    "they are. Read with `docker logs` on the host, whatever the logging driver.")
    parser.add_argument("--tail", "-n", type=int, default=100, metavar="N", help="last N lines per host (default 100)")
    parser.add_argument("--since", metavar="WHEN", help="only lines since: 10m, 2h, an RFC 3339 time, a Unix time")
    parser.add_argument("--follow", "-F", action="store_true", help="keep printing new lines until interrupted")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="K=V|@FILE",
                        help="the extra variables the deploy had (e.g. tritonops_deployment); repeatable")
    add_host_key_option(parser)
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.deploy.run import DeployOptions
    from tritonops.logs.ecs import parsed
    from tritonops.logs.fetch import read_logs
    from tritonops.logs.reading import since_value, tail_value
    from tritonops.playbook import parse_extra_vars

    playbook = default_playbook("deploy.yml")
    options = DeployOptions(playbook=playbook, roles_path=default_roles_path(playbook), limit=args.limit,
                            forks=args.forks, extra_vars=parse_extra_vars(args.extra_vars),
                            accept_new_host_keys=args.accept_new_host_keys)
    failed = False
    for results in read_logs(inventory_paths(args.inventory), options, tail=tail_value(args.tail),
                             since=since_value(args.since), follow=args.follow):
        width = max((len(r.host) for r in results), default=0)
        for result in results:
            if not result.ok:
                failed = True
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
    return 1 if failed else 0
