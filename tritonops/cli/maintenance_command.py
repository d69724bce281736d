"""`tritonops stop` and `tritonops start` (tritonops.deploy.maintenance): one parser shape for both."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.output import line, said, status_text, styled, with_notes

if TYPE_CHECKING:
    from rich.console import Group
    from rich.table import Table

DESCRIPTIONS = {
    "stop": "Stop the current release's replicas of each host for maintenance, one at a time: behind balancers each "
            "is drained first and stays drained. Nothing else changes; `tritonops start` brings them back.",
    "start": "Start the stopped replicas of each host's current release again (the same containers), each ready "
             "(its models too) before the balancers send to it again.",
}


def register_action(subparsers, common, action: str) -> None:
    from tritonops.cli.cmd_deploy import add_audit_log_option, add_no_drain_option, add_reading_options

    parser = subparsers.add_parser(action, parents=[common], help=COMMANDS[action], description=DESCRIPTIONS[action])
    parser.add_argument("--replica", type=int, default=None, metavar="N",
                        help=f"{action} only replica N of each host (default: every replica)")
    parser.add_argument("--check", "-C", action="store_true", help="change nothing: say what would be done")
    parser.add_argument("--break-lock", action="store_true",
                        help="take over a host's deployment lock held by another run (only when that run is gone)")
    add_audit_log_option(parser, "this run's events")
    if action == "stop":
        add_no_drain_option(parser)
    add_reading_options(parser)
    parser.set_defaults(run=run, maintenance_action=action, no_drain=False)


def run(args, out) -> int:
    from tritonops.cli.cmd_deploy import audit_log_of, default_playbook, run_inputs, show_host_results
    from tritonops.deploy.maintenance import MaintenanceOptions, maintain

    inputs = run_inputs(args, default_playbook("deploy.yml"))  # the deployment's variables as a deploy sees them
    options = MaintenanceOptions(action=args.maintenance_action, replica=args.replica, check=args.check,
                                 forks=args.forks, accept_new_host_keys=args.accept_new_host_keys,
                                 break_lock=args.break_lock, audit_log=audit_log_of(args),
                                 no_drain=args.no_drain)
    return show_host_results(out, args, maintain(inputs, options), args.maintenance_action,
                             lambda results: maintenance_table(results, args.maintenance_action, args.check))


def maintenance_table(results, action: str, check: bool) -> Table | Group:
    """STOP / START: per host, each replica's container state before and after (what it would be in --check); under
    the table what each host said (the drain on the balancers, a replica already in the asked state, why it
    failed: the lock, no current release)."""
    from rich.table import Table

    from tritonops.deploy.maintenance import Maintained

    table = Table(title=action.upper() + (" (check: nothing was changed)" if check else ""), title_justify="left")
    for column in ("host", "status", "release", "replica", "container", "state"):
        table.add_column(column, no_wrap=column in ("status", "release"))
    for result in results:
        done = result.payload
        changes = done.replicas if isinstance(done, Maintained) else ()
        release = styled(done.release if isinstance(done, Maintained) else "-")
        if not changes:
            table.add_row(styled(result.host), status_text(result.status), release, "", "", "")
        for index, change in enumerate(changes):
            head = (styled(result.host), status_text(result.status), release) if index == 0 else ("", "", "")
            moved = change.before != change.after
            state = line(change.before, " -> ", styled(change.after, "yellow")) if moved else styled(change.after)
            table.add_row(*head, str(change.index), styled(change.container), state)
    return with_notes(table, [said(result) for result in results if result.msg])
