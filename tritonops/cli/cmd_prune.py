"""`tritonops prune`: release folders and vllm_env images no kept release names (tritonops.deploy.prune)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.output import status_text, styled

if TYPE_CHECKING:
    from rich.table import Table


def register(subparsers, common) -> None:
    from tritonops.cli.cmd_deploy import add_audit_log_option, add_reading_options
    from tritonops.planning.prune import DEFAULT_KEEP

    parser = subparsers.add_parser(
        "prune", parents=[common], help=COMMANDS["prune"],
        description="On each host, under its deployment lock: remove the deployment's release folders older than "
                    "the --keep newest (never current, never previous, never one a running container uses) with "
                    "the containers parked for them, and every vllm_env image no kept release of any deployment "
                    "on the host names and no container uses (the host's index of deployments says which there "
                    "are). Weights are never pruned. Recorded in the audit log.")
    parser.add_argument("--keep", type=int, default=DEFAULT_KEEP, metavar="N",
                        help=f"keep the N newest releases of the deployment, besides current and previous "
                             f"(default {DEFAULT_KEEP}; 0: only current and previous)")
    parser.add_argument("--check", "-C", action="store_true", help="change nothing: say what would be removed")
    parser.add_argument("--break-lock", action="store_true",
                        help="take over a host's deployment lock held by another run (only when that run is gone)")
    add_audit_log_option(parser, "this run's events")
    add_reading_options(parser)
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.cli.cmd_deploy import audit_log_of, default_playbook, run_inputs, show_host_results
    from tritonops.deploy.prune import PruneOptions, prune
    from tritonops.planning.prune import checked_keep

    options = PruneOptions(keep=checked_keep(args.keep), check=args.check, forks=args.forks,
                           accept_new_host_keys=args.accept_new_host_keys, break_lock=args.break_lock,
                           audit_log=audit_log_of(args))  # a bad --keep is bad input before the inventory is read
    inputs = run_inputs(args, default_playbook("deploy.yml"))
    return show_host_results(out, args, prune(inputs, options), "prune", _table)


def _table(results) -> Table:
    from rich.table import Table

    from tritonops.image.ids import short_image_id
    from tritonops.units import gib

    check = any(r.payload is not None and r.payload.check for r in results)
    table = Table(title="PRUNE" + (" (check: nothing removed)" if check else ""), title_justify="left")
    for column in ("host", "status", "what", "", "why"):
        table.add_column(column)
    for result in results:
        pruned = result.payload
        if pruned is None:
            table.add_row(styled(result.host), status_text(result.status), "", "", styled(result.msg))
            continue
        rows = [(f"release {r.release}", r.remove, r.why) for r in pruned.releases]
        rows += [(f"image {short_image_id(i.id)} {','.join(i.tags)}".rstrip(), i.remove, i.why) for i in pruned.images]
        verb = "would remove" if pruned.check else "removed"
        first = True
        for what, remove, why in rows:
            action = styled(verb, "yellow") if remove else styled("kept", "green")
            table.add_row(styled(result.host) if first else "", status_text(result.status) if first else "",
                          styled(what), action, styled(why))
            first = False
        freed = f"would free up to {gib(pruned.image_bytes)} of images" if pruned.check else \
            f"freed {pruned.release_bytes:,} bytes of folders, up to {gib(pruned.image_bytes)} of images"
        table.add_row(styled(result.host) if first else "", status_text(result.status) if first else "", "", "",
                      styled(f"{result.msg} ({freed})"))
    return table
