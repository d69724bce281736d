"""rollback: playbooks/rollback.yml over the inventory, each host locked for the run (not in --check):
back to the named release, or to the newest earlier one that passed its gate."""

from __future__ import annotations

import time
from tritonops.deploy.door import update_doors
from tritonops.deploy.door_rollout import door_rollout, said_drained
from tritonops.deploy.event_log import events_phase
from tritonops.deploy.run import DeployOptions, DeployReport, locked, who
from tritonops.deploy.targets import write_targets
from tritonops.planning.bind import replica_bind
from tritonops.planning.cluster_rollout import outside_limit
from tritonops.planning.deployment import deployment_of
from tritonops.playbook import RunInputs, compile_playbook, run_playbook
from tritonops.playbook.events import EventStream, OnEvent
from tritonops.playbook.host_task import RunHooks
from tritonops.results import HostResult
from tritonops.transport.sessions import SessionPool
from tritonops.values.names import safe_name

BIND_FACT = "tritonops_replicas_bind"  # what the rollback role binds the replicas to


def rollback_vars(to: str | None) -> dict[str, str]:
    """The extra variable naming the release to go back to (--to), checked: it becomes a path on the host."""
    return {"tritonops_rollback_to": safe_name(to, "release", "--to")} if to else {}


def rollback_facts(hosts, behind_balancer: bool, to: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Per host, what its rollback role reads beyond the inventory: where its replicas bind (planning.bind: the
    inventory's choice now, so that a release made before a balancer existed comes back behind it, never on
    0.0.0.0; a host with no private address is refused here) and, from `to`, the release it goes back to."""
    facts = {host.name: {BIND_FACT: replica_bind(host, behind_balancer)} for host in hosts}
    for name, release in (to or {}).items():
        facts[name]["tritonops_rollback_to"] = safe_name(release, "release")
    return facts


def rollback(inputs: RunInputs, options: DeployOptions, *, on_event: OnEvent | None = None) -> DeployReport:
    """`inputs` loaded with rollback.yml and, for --to, `rollback_vars(to)` among the extra variables;
    `on_event` a subscriber of the run's event stream."""
    report = DeployReport(check=options.check)
    stream = EventStream([report.subscriber(), on_event])
    record = stream.phase
    started = time.time()
    hosts, balancers = inputs.hosts, list(inputs.balancers)
    deployments = {host.name: deployment_of(host) for host in hosts}
    doors = list(inputs.doors)  # every balancer, whatever --limit selects (deploy.door_rollout, deploy.door)
    fleet = list(inputs.fleet({name for _, name in deployments.values()} if hosts else None)) if doors else []

    binds = rollback_facts(hosts, inputs.behind_balancer)

    def compiled_for(names=None):
        return compile_playbook(inputs, host_facts=binds, tags=options.tags, skip_tags=options.skip_tags,
                                only_hosts=names, start_at_task=options.start_at_task)

    compiled = compiled_for()  # every error before any host is contacted
    partial = outside_limit(hosts, inputs.inventory.hosts)  # a pipeline goes back whole or not at all
    for name, why in partial.items():
        record(HostResult(name, "failed", why, task="cluster"))
    reached = {spec.name: spec for spec in compiled.connections}
    reached.update({host.name: host.connection for host in balancers + doors + fleet if host.name not in reached})
    with SessionPool(list(reached.values()), forks=options.forks,
                     accept_new_host_keys=options.accept_new_host_keys) as pool:
        try:
            with locked(pool, [spec.name for spec in compiled.connections if spec.name not in partial], deployments,
                        options, record) as ready:
                rollout = door_rollout(pool, ready, doors, deployments, options)  # each replica drained first
                report.run = run_playbook(compiled_for(ready), pool, check=options.check, diff=options.diff,
                                          on_event=stream, confirm=options.step, hooks=RunHooks(step_runner=rollout))
                said_drained(rollout, ready, record)
            if not options.check:
                events_phase(pool, hosts, deployments, report, options, who=who(), started=started,
                             finished=time.time(), on_phase=record)
                write_targets(pool, hosts, report, record, balancers,  # the release labels of the rolled-back hosts
                              behind_balancer=inputs.behind_balancer)
                update_doors(pool, doors, fleet, record)  # the replicas of the releases gone back to
        finally:
            report.traffic = pool.traffic()
    return report
