"""`tritonops prune` (issue #26): per host, under its deployment lock, the release folders and vllm_env images no
kept release names are removed (planning/prune.py decides, operations/prune.py removes), and recorded in the
audit log like a deploy's events. `--check` reads and decides only (no lock, nothing changed).

What a host holds is read first: its index of deployments (serving/deployment_index.py; a host deployed before
the index has none: the inventory's deployment is read alone, and the result says so), each indexed
deployment's releases (the releases fact), and its containers and images (image/host_objects.py). Folders are
pruned for the inventory's deployment only (this run holds its lock); every other deployment's releases keep the
images they name. Weights (`<root>/<deployment>/models/`) are never pruned.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

from tritonops.deploy.event_log import audit_results
from tritonops.deploy.run import LockedRunOptions, locked
from tritonops.errors import InputError, TritonopsError
from tritonops.facts.queries import FileQuery
from tritonops.facts.query_program import read_facts
from tritonops.image.host_objects import read_docker_objects
from tritonops.image.ids import short_image_id
from tritonops.operations.execute import run_step
from tritonops.operations.prune import prune_steps
from tritonops.modes.choice import host_ports
from tritonops.planning.deployment import deployment_of
from tritonops.planning.prune import (DEFAULT_KEEP, DeploymentOnHost, ImageDecision, PrunePlan, ReleaseDecision,
                                      ReleaseOnHost, checked_keep, decide_prune)
from tritonops.playbook.inputs import RunInputs
from tritonops.results import GroupResult, HostResult
from tritonops.serving.deployment_index import INDEX_PATH, IndexedDeployment, parse_index
from tritonops.serving.releases import read_deployed
from tritonops.transport.base import Transport
from tritonops.transport.sessions import HostSession, SessionPool
from tritonops.units import gib

TASK = "prune"


@dataclass(frozen=True)
class PruneOptions(LockedRunOptions):
    keep: int = DEFAULT_KEEP

    @property
    def command(self) -> str:
        return TASK


@dataclass(frozen=True)
class Pruned:
    """A host's payload: what the decision was, what was removed (or would be, in --check), and what it freed."""
    index: str                        # read | missing (a host deployed before the index)
    deployments: tuple[str, ...]      # <root>/<deployment> of each deployment read
    keep: int
    check: bool
    releases: tuple[ReleaseDecision, ...]
    images: tuple[ImageDecision, ...]
    containers: tuple[str, ...]       # parked containers of removed releases
    removed: tuple[str, ...]          # what was removed, in order ("release r1", "image 0123456789ab", ...)
    release_bytes: int                # the removed folders' sizes
    image_bytes: int                  # the removed images' sizes (shared layers stay: at most this is freed)


def prune(inputs: RunInputs, options: PruneOptions, clock=time.time) -> GroupResult:
    """One result per selected host (task prune), then the hosts whose lock was refused."""
    checked_keep(options.keep)
    hosts = list(inputs.hosts)
    if not hosts:
        raise InputError(f"no serving host matches {inputs.limit or 'the inventory'}",
                         "--limit" if inputs.limit else "-i")
    names = [host.name for host in hosts]
    deployments = {host.name: deployment_of(host) for host in hosts}  # checked before any host is contacted
    ports = {host.name: host_ports(host.vars) for host in hosts}
    started = clock()
    refused: list[HostResult] = []
    with SessionPool([host.connection for host in hosts], forks=options.forks,
                     accept_new_host_keys=options.accept_new_host_keys) as pool:
        with locked(pool, names, deployments, options, refused.append) as held:
            done = pool.run(lambda session: _on_host(session, deployments[session.name], ports[session.name], options),
                            held, task=TASK)
    results = GroupResult.of(sorted([*done, *(r for r in refused if r.failed)], key=lambda r: names.index(r.host)))
    if options.audit_log is not None and not options.check:
        audit_results(options.audit_log, results, deployments, command=TASK, started=started, finished=clock())
    return results


def read_index(transport: Transport) -> tuple[IndexedDeployment, ...] | None:
    """The deployments the host's index names; None when the host has no index."""
    query = FileQuery(INDEX_PATH, content=True)
    found = read_facts(transport, [query]).file(INDEX_PATH)
    if found.kind == "missing":
        return None
    if found.kind != "file" or found.text is None:
        raise TritonopsError(f"{INDEX_PATH} is not tritonops' index of deployments (a {found.kind})")
    return parse_index(found.text).deployments


def read_host(transport: Transport, root: str, deployment: str, ports: Mapping[str, int]):
    """(index read?, each deployment as the decision needs it, images, containers); `ports`: the host's port
    variables (modes.choice.host_ports)."""
    index = read_index(transport)
    mine = IndexedDeployment(root, deployment)
    entries = sorted({*(index or ()), mine})
    on_host = []
    for entry in entries:
        deployed = read_deployed(transport, entry.root, entry.deployment, ports)
        previous = deployed.previous
        on_host.append(DeploymentOnHost(
            entry.root, entry.deployment,
            tuple(ReleaseOnHost(r.id, r.image_id, r.damaged is not None) for r in deployed.releases),
            deployed.current, previous.id if previous else None, pruned=entry == mine))
    images, containers = read_docker_objects(transport)
    return index is not None, tuple(on_host), images, containers


def _on_host(session: HostSession, deployment: tuple[str, str], ports: Mapping[str, int],
             options: PruneOptions) -> HostResult[Pruned]:
    root, name = deployment
    try:
        indexed, on_host, images, containers = read_host(session.transport, root, name, ports)
    except TritonopsError as err:
        return HostResult(session.name, "failed", f"{err}: nothing removed", task=TASK)
    plan = decide_prune(on_host, images, containers, options.keep)
    removed, release_bytes, errors = [], 0, []
    if not options.check:
        for what, step in prune_steps(plan):
            try:
                result = run_step(session.transport, step)
            except TritonopsError as err:
                errors.append(f"{what}: {err}")
                continue
            removed.append(what)
            if what.startswith("release "):
                release_bytes += int(json.loads(result.stdout or "{}").get("bytes", 0))
    done = Pruned("read" if indexed else "missing", tuple(f"{d.root}/{d.deployment}" for d in on_host),
                  options.keep, options.check, plan.releases, plan.images, plan.removed_containers, tuple(removed),
                  release_bytes, sum(i.size_bytes for i in plan.removed_images
                                     if options.check or f"image {short_image_id(i.id)}" in removed))
    said = [said_of(plan, name, options.check)]
    if not indexed:
        said.append(f"no index of deployments on the host ({INDEX_PATH}): read {root}/{name} only")
    said += errors
    status = "failed" if errors else "ok" if plan.nothing_to_do else "changed"
    return HostResult(session.name, status, "; ".join(said), done, task=TASK)


def said_of(plan: PrunePlan, deployment: str, check: bool) -> str:
    """'removed 2 releases of chat (r1, r2) and 1 image (0123456789ab, 1.20 GiB); kept 3 releases, 1 image'."""
    gone_releases, gone_images = plan.removed_releases, plan.removed_images
    kept_releases = len(plan.releases) - len(gone_releases)
    kept_images = len(plan.images) - len(gone_images)
    kept = f"kept {_count(kept_releases, 'release')}, {_count(kept_images, 'vllm_env image')}"
    if plan.nothing_to_do:
        return f"nothing to prune of {deployment}; {kept}"
    parts = []
    if gone_releases:
        parts.append(f"{_count(len(gone_releases), 'release')} of {deployment} "
                     f"({', '.join(r.release for r in gone_releases)})")
    if gone_images:
        parts.append(f"{_count(len(gone_images), 'image')} ({', '.join(short_image_id(i.id) for i in gone_images)}, "
                     f"{gib(plan.image_bytes)})")
    return f"{'would remove' if check else 'removed'} {' and '.join(parts)}; {kept}"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
