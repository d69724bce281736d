"""The group tree: implicit 'all' and 'ungrouped', parents, depth, and cycle detection."""

from __future__ import annotations

from dataclasses import dataclass

from tritonops.errors import InputError
from tritonops.inventory.draft import InventoryDraft


@dataclass(frozen=True)
class GroupTree:
    order: tuple[str, ...]  # 'all', 'ungrouped', then groups as first written
    children: dict[str, tuple[str, ...]]
    parents: dict[str, tuple[str, ...]]
    direct_hosts: dict[str, tuple[str, ...]]
    depth: dict[str, int]

    def ancestors_and_self(self, groups: list[str]) -> set[str]:
        seen: set[str] = set()
        pending = list(groups)
        while pending:
            group = pending.pop()
            if group not in seen:
                seen.add(group)
                pending.extend(self.parents[group])
        return seen


def build_group_tree(draft: InventoryDraft) -> GroupTree:
    for parent, group in draft.groups.items():
        if "all" in group.children:
            raise InputError(f"group 'all' cannot be a child of '{parent}': every group is already under 'all'",
                             group.children["all"])
    _reject_cycles(draft)
    order = ["all", "ungrouped"] + [name for name in draft.groups if name not in ("all", "ungrouped")]
    children = {name: list(draft.groups[name].children) if name in draft.groups else [] for name in order}
    parents: dict[str, list[str]] = {name: [] for name in order}
    for parent in order:
        for child in children[parent]:
            parents[child].append(parent)
    for name in order[1:]:
        if not parents[name]:
            parents[name].append("all")
            children["all"].append(name)
    children["all"].sort(key=lambda name: name != "ungrouped")  # stable: 'ungrouped' first, as Ansible shows it
    direct = {name: list(draft.groups[name].hosts) if name in draft.groups else [] for name in order}
    grouped = {host for name in order[2:] for host in direct[name]}
    direct["ungrouped"] += [host for host in draft.hosts if host not in grouped and host not in direct["ungrouped"]]
    depth: dict[str, int] = {}
    for name in order:
        _depth(name, parents, depth)
    return GroupTree(tuple(order), {name: tuple(kids) for name, kids in children.items()},
                     {name: tuple(ups) for name, ups in parents.items()},
                     {name: tuple(hosts) for name, hosts in direct.items()}, depth)


def _depth(name: str, parents: dict[str, list[str]], known: dict[str, int]) -> int:
    if name not in known:
        known[name] = 1 + max((_depth(parent, parents, known) for parent in parents[name]), default=-1)
    return known[name]


def _reject_cycles(draft: InventoryDraft) -> None:
    finished: set[str] = set()
    for start in draft.groups:
        if start in finished:
            continue
        path = [start]
        stack = [iter(draft.groups[start].children)]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
                finished.add(path.pop())
                continue
            if child in path:
                loop = " -> ".join(path[path.index(child):] + [child])
                raise InputError(f"group '{child}' is its own ancestor ({loop})",
                                 draft.groups[path[-1]].children[child])
            if child not in finished:
                path.append(child)
                stack.append(iter(draft.groups[child].children))
