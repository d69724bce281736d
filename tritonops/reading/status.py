"""`tritonops status`: per host, what runs and how it does (tritonops.serving.status); per balancer, how its doors
see each replica (HAProxy's `show stat` through the runtime program over SSH: door.servers). Read-only."""

from __future__ import annotations

from tritonops.door.servers import DoorStatus, door_status
from tritonops.logs.shipping import shipping_of
from tritonops.modes.choice import host_ports, serving_mode
from tritonops.facts.query_program import read_facts
from tritonops.planning.bind import replica_bind, serving_address
from tritonops.planning.deployment import deployment_of
from tritonops.planning.serve_record import ClusterRecord
from tritonops.playbook.inputs import RunInputs
from tritonops.reading.door import door_rows
from tritonops.reading.sessions import ReadOptions, reading_pool
from tritonops.results import GroupResult, HostResult
from tritonops.facts.queries import CommandQuery
from tritonops.serving.ray_member import NODES_SCRIPT, ClusterView, cluster_view, node_container, parse_nodes
from tritonops.serving.releases import read_deployed
from tritonops.serving.status import (STOPPED, HostStatus, container_states_query, health_query, host_status,
                                      parse_container_states, parse_containers, parse_health, replica_state,
                                      replica_status, utc_now)
from tritonops.serving.verdict import kv_warning
from tritonops.transport.sessions import HostSession


def status(inputs: RunInputs, options: ReadOptions) -> GroupResult:
    """One result per selected host (task "status") and then one per selected balancer (task "door")."""
    by_name = {host.name: host for host in inputs.hosts}
    # where each host's replicas bind by its variables, for a release that recorded no serve.bind: checked before
    # any host is contacted
    planned = {host.name: replica_bind(host, inputs.behind_balancer) for host in inputs.hosts}

    def phase(session: HostSession) -> HostResult:
        host = by_name[session.name]
        root, deployment = deployment_of(host)
        deployed = read_deployed(session.transport, root, deployment, host_ports(host.vars))
        release = deployed.current_release
        address = serving_address(release.bind if release else None, planned[session.name])
        serve = release.serve if release else None
        models = serve.models if serve else ()
        placement = serve.replicas if serve else ()
        mode = release.mode if release else serving_mode(None)
        if len(placement) > 1:  # every replica of the current release, on its own ports
            probes = [health_query(mode, r.ports, models, address) for r in placement]
            names = tuple(r.container(deployment) for r in placement)
            states_query = container_states_query(names)
            read = read_facts(session.transport, [*probes, states_query])
            containers = parse_containers(read.command(states_query.argv).stdout)
            healths = [parse_health(read.command(p.argv).stdout) for p in probes]
            replicas = tuple(replica_status(r, replica_state(containers.get(name), deployed.current), h)
                             for r, name, h in zip(placement, names, healths))
            health = healths[0]
        else:  # one replica: at the ports its release recorded, else (nothing deployed) the variables'
            ports = placement[0].ports if placement else tuple(host_ports(host.vars)[role] for role in mode.port_roles)
            probe = health_query(mode, ports, models, address)
            health = parse_health(read_facts(session.transport, [probe]).command(probe.argv).stdout)
            replicas = ()
        cluster = serve.cluster if serve else None
        view = _cluster_view(session, cluster, deployment) if cluster else None
        found = host_status(session.name, deployed, health, utc_now(), shipping_of(host.vars, deployment), replicas,
                            view)
        said = host_said(found, view)
        if found.kv_shortfall is not None:  # a warning: it serves, with less concurrency than the plan promised
            said += "; " + kv_warning(found.kv_predicted, found.kv_reported, found.kv_shortfall)
        return HostResult(session.name, "ok" if found.ok else "failed", said, found)

    deployments = {deployment_of(host)[1] for host in inputs.hosts}
    with reading_pool(inputs, options, balancers=True) as pool:
        hosts = pool.run(phase, [host.name for host in inputs.hosts], task="status")
        doors = pool.run(lambda session: _door(session, deployments), [b.name for b in inputs.balancers], task="door")
    return GroupResult.of(list(hosts) + list(doors))


def host_said(found: HostStatus, view: ClusterView | None) -> str:
    """A host's status in one line: serving, or what does not serve; stopped replicas (serving.status.replica_state)
    are named with what brings them back. Pure."""
    if view is not None and (view.role == "worker" or not view.whole):
        return view.said()
    stopped = found.stopped
    start = f"`tritonops start --limit {found.host}` starts {'it' if len(stopped) == 1 else 'them'} again"
    if not found.replicas:
        if stopped:
            return f"stopped (tritonops stop or docker stop): {start}"
        return "serving" if found.serving else f"container {found.container}, ready {found.ready}"
    serving = [r for r in found.replicas if r.serving]
    down = [r for r in found.replicas if not r.serving and r.container != STOPPED]
    said = [f"serving: {len(serving)} of {len(found.replicas)} replicas ready" if stopped else
            f"serving: {len(found.replicas)} replicas ready"] if found.serving else []
    said += [f"replica {r.index} (GPU {','.join(map(str, r.gpus))}): container {r.container}, ready {r.ready}"
             for r in down]
    if stopped:
        which = "replica " + ", ".join(map(str, stopped)) if len(stopped) < len(found.replicas) else "every replica"
        said.append(f"{which} stopped (tritonops stop or docker stop): {start}")
    return "; ".join(said)


def _cluster_view(session: HostSession, cluster: ClusterRecord, deployment: str) -> ClusterView:
    """A pipeline member's Ray node and, on the head, the members its Ray lists alive."""
    container = node_container(deployment)
    states = container_states_query((container,))
    read = read_facts(session.transport, [states])
    node = parse_container_states(read.command(states.argv).stdout).get(container, "absent")
    nodes = None
    if node == "running" and not cluster.worker:
        asked = CommandQuery(("docker", "exec", container, "python3", "-c", NODES_SCRIPT))
        answer = read_facts(session.transport, [asked]).command(asked.argv)
        nodes = parse_nodes(answer.stdout) if answer.ok else None
    return cluster_view(cluster, node, nodes)


def _door(session: HostSession, deployments: set[str]) -> HostResult[DoorStatus]:
    """The balancer's door servers of the run's deployments (all of them when the run selected no serving host);
    failed when a deployment has no replica UP (its door answers 503 no_replica) or no door there."""
    found = door_status(door_rows(session), deployments or None)
    missing = sorted(deployments - set(found.deployments()))
    down = [d for d in found.deployments() if not found.up(d)]
    said = [found.summary()] if found.servers else []
    said += [f"{d}: no door here (a deploy makes it)" for d in missing]
    said += [f"{d}: no replica UP, the door answers 503 no_replica" for d in down]
    return HostResult(session.name, "failed" if missing or down or not found.servers else "ok",
                      "; ".join(said) or "no door", found, task="door")
