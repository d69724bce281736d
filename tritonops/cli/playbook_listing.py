"""--syntax-check, --list-hosts and --list-tasks of `deploy` and `rollback`, as ansible-playbook has them: they
read the playbook, its roles, the inventory, -e and --limit, print, and stop before any host is contacted."""

from __future__ import annotations

from tritonops.cli.output import styled


def add_listing_options(parser) -> None:
    parser.add_argument("--syntax-check", action="store_true",
                        help="check the playbook, its roles, the inventory and -e, then stop (no host is contacted)")
    parser.add_argument("--list-hosts", action="store_true", help="the hosts each play would run on, then stop")
    parser.add_argument("--list-tasks", action="store_true",
                        help="the tasks each play would run (after --tags / --skip-tags), then stop")


def wants_listing(args) -> bool:
    return bool(args.syntax_check or args.list_hosts or args.list_tasks)


def show_listing(out, args, inputs, tags, skip_tags) -> int:
    """Exit 0 once everything read is valid; a mistake raised while reading has its file:line (exit 5)."""
    from tritonops.playbook.listing import list_plays

    plays = list_plays(inputs, tags, skip_tags)
    balancers = [host.name for host in inputs.balancers]
    if args.json:
        out.json({"playbook": inputs.playbook.path, "balancers": balancers, "plays": [
            {"number": play.number, "name": play.name, "pattern": play.pattern, "hosts": list(play.hosts),
             "tasks": [{"name": task.name, "role": task.role, "tags": list(task.tags), "where": task.where}
                       for task in play.tasks]} for play in plays]})
        return 0
    out.print(styled(f"\nplaybook: {inputs.playbook.path}"))
    if args.syntax_check and not (args.list_hosts or args.list_tasks):
        return 0
    for play in plays:
        out.print(styled(f"\n  play #{play.number} ({play.pattern}): {play.name}", "bold"))
        if args.list_hosts:
            out.print(styled(f"    pattern: {[play.pattern]}\n    hosts ({len(play.hosts)}):"))
            for host in play.hosts:
                out.print(styled(f"      {host}"))
        if args.list_tasks:
            out.print(styled("    tasks:"))
            for task in play.tasks:
                role = f"{task.role} : " if task.role else ""
                out.print(styled(f"      {role}{task.name}    TAGS: [{', '.join(task.tags)}]"))
    if args.list_hosts and balancers:
        out.print(styled(f"\n  balancers ({len(balancers)}, their doors follow the replicas):"))
        for name in balancers:
            out.print(styled(f"      {name}"))
    return 0
