"""What each host serves once a run is over: its `current` release as the host's releases fact reads it back (the
release a rollback left, a no-op redeploy's same one), for the steps after the run that describe the fleet: the
Prometheus targets (deploy.targets) and the balancers' doors (deploy.door)."""

from __future__ import annotations


from tritonops.modes.choice import host_ports
from tritonops.planning.deployment import deployment_of
from tritonops.results import HostResult
from tritonops.serving.releases import ReleaseRecord, read_deployed
from tritonops.transport.sessions import HostSession, SessionPool


def read_current(pool: SessionPool, hosts, task: str) -> dict[str, HostResult]:
    """host -> a result whose payload is its current ReleaseRecord, or None when it serves nothing."""
    by_name = {host.name: host for host in hosts}

    def phase(session: HostSession) -> HostResult:
        root, deployment = deployment_of(by_name[session.name])
        release: ReleaseRecord | None = read_deployed(session.transport, root, deployment,
                                                      host_ports(by_name[session.name].vars)).current_release
        return HostResult(session.name, "ok", "", release)

    return {result.host: result for result in pool.run(phase, [host.name for host in hosts], task=task)}
