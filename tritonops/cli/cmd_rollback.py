"""`tritonops rollback`: back to the previous release that served, or `--to RELEASE`, on each host."""

from __future__ import annotations

from tritonops.cli.commands import COMMANDS
from tritonops.cli.cmd_deploy import (_print_report, _Progress, _report_json, _tags, add_playbook_options,
                                      audit_log_of, default_playbook, run_inputs, step_options)


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "rollback", parents=[common], help=COMMANDS["rollback"],
        description="Each host goes back to the newest release before `current` that passed its health gate "
                    "(or --to RELEASE): image, model repository and engine arguments together, read from the "
                    "host's release.json, gated like a deploy; if it does not pass, the current release comes back. "
                    "`tritonops releases` lists each host's releases and names the previous one.")
    parser.add_argument("--to", metavar="RELEASE", help="the release id to go back to (see tritonops releases)")
    add_playbook_options(parser, "rollback.yml")
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.deploy.rollback import rollback, rollback_vars
    from tritonops.deploy.run import DeployOptions

    inputs = run_inputs(args, args.playbook or default_playbook("rollback.yml"), rollback_vars(args.to))
    from tritonops.cli.playbook_listing import show_listing, wants_listing

    if wants_listing(args):
        return show_listing(out, args, inputs, _tags(args.tags) or ("all",), _tags(args.skip_tags))
    options = DeployOptions(
        tags=_tags(args.tags) or ("all",),
        skip_tags=_tags(args.skip_tags), check=args.check, diff=args.diff, forks=args.forks,
        accept_new_host_keys=args.accept_new_host_keys, break_lock=args.break_lock, command="rollback",
        audit_log=audit_log_of(args), no_drain=args.no_drain, **step_options(args))
    progress = None if args.json else _Progress(out)
    report = rollback(inputs, options, on_event=progress)
    if args.json:
        out.json(_report_json(report, "rollback"))
    else:
        _print_report(out, report, args, title="ROLLBACK RECAP")
    return report.exit_code
