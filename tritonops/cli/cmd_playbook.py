"""`tritonops playbook PLAYBOOK -i INV`: a playbook of one's own run over the inventory, as ansible-playbook runs
one (see tritonops.deploy.play): its roles' tasks and nothing of a deploy around them (docs/roles.md)."""

from __future__ import annotations

from tritonops.cli.commands import COMMANDS
from tritonops.cli.cmd_deploy import (_Progress, _report_json, _tags, add_play_options, recap_table, run_inputs,
                                      step_options)
from tritonops.cli.output import line, styled
from tritonops.cli.selection import add_host_key_option


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "playbook", parents=[common], help=COMMANDS["playbook"],
        description="Run PLAYBOOK over the inventory, task by task, as ansible-playbook does: its roles (roles/ "
                    "beside it, --roles-path, then the shipped ones) with Ansible's copy, template, file, command "
                    "and debug, or tritonops' own operations. No probe, lock or image: only the tasks. --check "
                    "changes nothing and says what would change; --diff shows each file's change.")
    parser.add_argument("playbook", metavar="PLAYBOOK", help="the playbook file")
    add_play_options(parser)
    add_host_key_option(parser)
    from tritonops.cli.playbook_listing import add_listing_options

    add_listing_options(parser)
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.cli.playbook_listing import show_listing, wants_listing
    from tritonops.deploy.play import play
    from tritonops.deploy.run import DeployOptions

    inputs = run_inputs(args, args.playbook)
    tags, skip_tags = _tags(args.tags) or ("all",), _tags(args.skip_tags)
    if wants_listing(args):
        return show_listing(out, args, inputs, tags, skip_tags)
    options = DeployOptions(tags=tags, skip_tags=skip_tags, check=args.check, diff=args.diff, forks=args.forks,
                            accept_new_host_keys=args.accept_new_host_keys, command="playbook", **step_options(args))
    progress = None if args.json else _Progress(out)
    report = play(inputs, options, on_event=progress)
    if args.json:
        out.json(_report_json(report, "playbook"))
    else:
        _print(out, report, args.diff)
    return report.exit_code


def _print(out, report, diff: bool) -> None:
    """With --diff each task's changes per host (files as unified diffs), then the recap."""
    for result in report.run.results if diff and report.run else ():
        if result.diff:
            out.print(styled(f"--- {result.host}: {result.task}", "dim"))
            out.print(styled(result.diff.rstrip("\n")))
    if report.run and report.run.stopped_reason:
        out.print(line(styled("stopped: ", "red"), report.run.stopped_reason))
    out.print(recap_table(report.recap, "PLAY RECAP (check: nothing was changed)" if report.check else "PLAY RECAP"))
