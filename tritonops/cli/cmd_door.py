"""`tritonops door rotate-key|retire-keys`: the balancers' API keys (tritonops.deploy.door_keys), changed on each
balancer of the run; only key ids are shown, never a key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.output import status_text

if TYPE_CHECKING:
    from rich.table import Table


def register(subparsers, common) -> None:
    from tritonops.cli.cmd_deploy import add_audit_log_option
    from tritonops.cli.selection import add_extra_vars_option, add_host_key_option

    parser = subparsers.add_parser("door", parents=[common], help=COMMANDS["door"],
                                   description="The front door's API keys on the balancers (tritonops_balancers).")
    actions = parser.add_subparsers(dest="door_action", metavar="ACTION", required=True)
    shared = type(common)(add_help=False)
    add_extra_vars_option(shared)
    shared.add_argument("--check", "-C", action="store_true", help="change nothing: say what would change")
    add_audit_log_option(shared, "the change")
    add_host_key_option(shared)
    rotate = actions.add_parser(
        "rotate-key", parents=[common, shared], help="a new API key on every balancer (made there, never shown)",
        description="Each balancer makes a new key in its tritonops_api_keys_file (0600) and reloads HAProxy "
                    "hitlessly; the old keys stop opening at once, or with --keep-old stay open until "
                    "`tritonops door retire-keys`. Only key ids are shown: read the key on the balancer.")
    rotate.add_argument("--keep-old", action="store_true",
                        help="keep the old key(s) open too while clients move to the new one")
    rotate.set_defaults(run=run, keys_action="rotate")
    retire = actions.add_parser(
        "retire-keys", parents=[common, shared], help="only the newest API key opens (after rotate-key --keep-old)",
        description="Each balancer keeps only the newest key (the first line) of its tritonops_api_keys_file and "
                    "reloads HAProxy hitlessly.")
    retire.set_defaults(run=run, keys_action="retire", keep_old=False)


def run(args, out) -> int:
    from tritonops.cli.cmd_deploy import audit_log_of, default_playbook, run_inputs, show_host_results
    from tritonops.deploy.door_keys import KeysOptions, change_keys

    inputs = run_inputs(args, default_playbook("deploy.yml"))  # the balancers' variables as a deploy sees them
    options = KeysOptions(action=args.keys_action, keep_old=args.keep_old, check=args.check, forks=args.forks,
                          accept_new_host_keys=args.accept_new_host_keys, audit_log=audit_log_of(args))
    command = "door rotate-key" if args.keys_action == "rotate" else "door retire-keys"
    return show_host_results(out, args, change_keys(inputs, options), command, _table)


def _table(results) -> Table:
    from rich.table import Table

    table = Table(title="DOOR KEYS", title_justify="left")
    for column in ("host", "status", "keys"):
        table.add_column(column)
    for result in results:
        table.add_row(result.host, status_text(result.status), result.msg)
    return table
