"""--tags / --skip-tags: which tasks run, with Ansible's rules.

A task's tags are its own plus its role entry's and its play's. Special tags: `always` runs unless
--skip-tags names one of its tags (--skip-tags all skips every task but `always` ones), `never`
runs only when asked for by one of its other tags, `tagged` / `untagged` select tasks with / without tags, and
`all` (the default of --tags) is every task not tagged `never`.
"""

from __future__ import annotations

from collections.abc import Collection

UNTAGGED = frozenset({"untagged"})


def should_run(task_tags: Collection[str], only: Collection[str] = ("all",), skip: Collection[str] = ()) -> bool:
    tags = frozenset(task_tags) or UNTAGGED
    only, skip = set(only) or {"all"}, set(skip)
    run = ("always" in tags
           or ("all" in only and "never" not in tags)
           or not tags.isdisjoint(only)
           or ("tagged" in only and tags != UNTAGGED and "never" not in tags))
    if run and skip:
        if "all" in skip:
            run = "always" in tags and "always" not in skip
        elif not tags.isdisjoint(skip) or ("tagged" in skip and tags != UNTAGGED):
            run = False
    return run
