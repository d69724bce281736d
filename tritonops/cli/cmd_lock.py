"""`tritonops lock status|release`: each host's deployment lock (tritonops.deploy.lock_admin)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.output import status_text, styled

if TYPE_CHECKING:
    from rich.table import Table


def register(subparsers, common) -> None:
    from tritonops.cli.cmd_deploy import add_audit_log_option, add_reading_options

    parser = subparsers.add_parser(
        "lock", parents=[common], help=COMMANDS["lock"],
        description="A deploy or rollback holds each host's deployment lock (<root>/<deployment>/lock) while it "
                    "writes there; a second run is refused naming the holder.")
    actions = parser.add_subparsers(dest="lock_action", metavar="ACTION", required=True)
    shared = type(common)(add_help=False)
    add_reading_options(shared)
    status = actions.add_parser(
        "status", parents=[common, shared], help="who holds each host's lock and since when",
        description="Per host: free, or held by user@controller (the run's pid and command, since when, its "
                    "lock id: the token in the lock file); stale when it is older than a deploy waits for (the "
                    "next deploy takes it over).")
    status.set_defaults(run=run_status)
    release = actions.add_parser(
        "release", parents=[common, shared], help="remove each host's lock held by OWNER (--force OWNER)",
        description="Removes the lock of each selected host whose holder is OWNER (user@controller, or the lock id "
                    "`tritonops lock status` shows); a lock held by anyone else stays, and that host says who "
                    "holds it. Use it for a run that is gone (a killed controller); a running deploy loses its "
                    "lock, not its work. Recorded in the audit log.")
    release.add_argument("--force", required=True, metavar="OWNER",
                         help="the holder, as `lock status` names it: user@controller or its lock id")
    add_audit_log_option(release, "the release")
    release.set_defaults(run=run_release)


def run_status(args, out) -> int:
    from tritonops.cli.cmd_deploy import reading_inputs, show_host_results
    from tritonops.deploy.lock_admin import lock_status

    return show_host_results(out, args, lock_status(*reading_inputs(args)), "lock status", _table)


def run_release(args, out) -> int:
    from tritonops.cli.cmd_deploy import audit_log_of, reading_inputs, show_host_results
    from tritonops.deploy.lock_admin import ReleaseLockOptions, forced_owner, release_lock

    owner = forced_owner(args.force)  # a malformed OWNER is bad input before the inventory is read
    inputs, read = reading_inputs(args)
    results = release_lock(inputs, ReleaseLockOptions(owner, read, audit_log_of(args)))
    return show_host_results(out, args, results, "lock release", _release_table)


def _table(results) -> Table:
    from rich.table import Table

    table = Table(title="LOCK", title_justify="left")
    for column in ("host", "status", "lock", "held by", "command", "since", "age", "lock id"):
        table.add_column(column)
    for result in results:
        state = result.payload
        if state is None or not state.lock_id:
            lock = "-" if state is None else ("free" if not state.held else "held")
            said = "-" if state is not None and not state.held else result.msg  # unreachable, a foreign file
            table.add_row(styled(result.host), status_text(result.status), lock, styled(said), *("",) * 4)
            continue
        age = f"{state.age_s / 60:.0f} min" + (" (stale)" if state.stale else " (run gone)" if state.gone else "")
        table.add_row(styled(result.host), status_text(result.status), "held", styled(state.holder),
                      styled(f"{state.command} (pid {state.pid})"), styled(state.since),
                      styled(age, "yellow" if state.stale or state.gone else ""), styled(state.lock_id))
    return table


def _release_table(results) -> Table:
    from rich.table import Table

    table = Table(title="LOCK RELEASE", title_justify="left")
    for column in ("host", "status", "lock"):
        table.add_column(column)
    for result in results:
        table.add_row(styled(result.host), status_text(result.status), styled(result.msg))
    return table
