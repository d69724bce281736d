"""`tritonops releases`: every release kept on each host (the releases fact, serving/releases.py), newest first,
with the one `current` points to and the one a rollback goes back to. Read-only."""

from __future__ import annotations


from tritonops.planning.deployment import deployment_of
from tritonops.playbook.inputs import RunInputs
from tritonops.modes.choice import host_ports
from tritonops.reading.sessions import ReadOptions, read_each
from tritonops.results import GroupResult, HostResult
from tritonops.serving.releases import ReleaseListing, read_deployed, release_listing
from tritonops.transport.sessions import HostSession

TASK = "releases"


def releases(inputs: RunInputs, options: ReadOptions) -> GroupResult:
    """One result per selected host: ok with its ReleaseListing (none kept is ok too: nothing deployed yet)."""
    deployments = {host.name: deployment_of(host) for host in inputs.hosts}  # checked before any host is contacted
    ports = {host.name: host_ports(host.vars) for host in inputs.hosts}

    def phase(session: HostSession) -> HostResult[ReleaseListing]:
        root, deployment = deployments[session.name]
        listing = release_listing(read_deployed(session.transport, root, deployment, ports[session.name]))
        return HostResult(session.name, "ok", said(listing, deployment), listing, task=TASK)

    return read_each(inputs, options, phase, TASK)


def said(listing: ReleaseListing, deployment: str) -> str:
    if not listing.releases:
        return f"no release of {deployment} on this host"
    kept = f"{len(listing.releases)} release{'s' if len(listing.releases) > 1 else ''} of {deployment}"
    current = f"current {listing.current}" if listing.current else "none current"
    previous = f"previous {listing.previous}" if listing.previous else "no previous that served"
    return f"{kept}; {current}; {previous}"
