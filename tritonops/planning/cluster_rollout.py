"""A pipeline across hosts is deployed as one unit (issue #28): a member that leaves the run (its lock, its image,
a `serial` that puts it in another batch) takes the whole cluster out before any host of it is touched, and
every member must run the same image (Ray refuses nodes of other Ray or Python versions). Pure: each answers
host -> why, for the members that must leave too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def cluster_members(plans: Iterable) -> dict[str, tuple[str, ...]]:
    """cluster name -> its members' hosts (head first), from the plans that formed one."""
    found: dict[str, tuple[str, ...]] = {}
    for plan in plans:
        if plan.ok and plan.cluster is not None:
            found[plan.cluster.name] = tuple(m.host for m in plan.cluster.members)
    return found


def incomplete(clusters: Mapping[str, Sequence[str]], present: Iterable[str], why: str) -> dict[str, str]:
    """The members still present of each cluster a member of which is not (`why`: what the run is at)."""
    here = set(present)
    out = {}
    for name, members in clusters.items():
        gone = [m for m in members if m not in here]
        if gone:
            for member in members:
                if member in here:
                    out[member] = f"cluster {name}: {', '.join(gone)} left the run ({why}); the cluster is deployed " \
                                  "as one unit"
    return out


def split_by_batches(clusters: Mapping[str, Sequence[str]], cut: Sequence[Sequence[str]]) -> dict[str, str]:
    """Members of a cluster that `serial` puts in more than one batch."""
    batch_of = {host: i for i, batch in enumerate(cut) for host in batch}
    out = {}
    for name, members in clusters.items():
        numbers = {batch_of[m] for m in members if m in batch_of}
        if len(numbers) > 1:
            for member in members:
                out[member] = (f"cluster {name}: serial puts its members {', '.join(members)} in different batches; "
                               "a pipeline is rolled out as one unit: give a serial that keeps them in one batch")
    return out


def mixed_images(clusters: Mapping[str, Sequence[str]], images: Mapping[str, str]) -> dict[str, str]:
    """Members of a cluster whose hosts would not run one image."""
    out = {}
    for name, members in clusters.items():
        ids = {images[m] for m in members if m in images}
        if len(ids) > 1:
            listing = ", ".join(f"{m} {images[m][:19]}" for m in members if m in images)
            for member in members:
                out[member] = (f"cluster {name}: its members would run different vllm_env images ({listing}); Ray "
                               "needs the same Ray and Python on every node")
    return out
