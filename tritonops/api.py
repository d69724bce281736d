"""tritonops from Python: `probe`, `plan`, `deploy`, `rollback` and `status`, each returning the typed results the
CLI renders (a GroupResult of HostResults, or a DeployReport), printing nothing and exiting nothing. A mistake in
the input raises the typed error the CLI would report (InputError, PlaybookError: TritonopsError) before any host
is contacted; what happens on hosts is in the results, one per host, never an exception.

The hosts are either an inventory (`inventory=` paths, as -i; `limit=` as --limit) or `hosts=`:
- a mapping of inventory names to their variables: {"gpu1": {"ansible_host": "10.0.0.5", "tritonops_model": ...}};
- a list of names (each its own address, or a ~/.ssh/config alias);
- fabric objects (`pip install 'tritonops[fabric]'`): a Connection, a Group (SerialGroup, ThreadingGroup), a list
  of Connections or a mapping name -> Connection. tritonops opens each through fabric with its own host-key policy
  (transport/fabric_adapter.py).
`vars=` are variables of every host (the inventory's `all: vars:`), `extra_vars=` are -e's (above everything).

    from tritonops import api

    report = api.deploy(hosts=ThreadingGroup("gpu1", "gpu2", user="ubuntu"),
                        vars={"tritonops_model": "/models/llama"}, options=api.DeployOptions(forks=4))
    assert report.ok, report.recap.rows()

The flows are those of the CLI (tritonops.deploy.flow, deploy.rollback, reading.status, facts.probe,
planning); docs/python-api.md has a fabfile.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Sequence

from tritonops.errors import InputError

if TYPE_CHECKING:
    from tritonops.deploy.run import DeployOptions, DeployReport
    from tritonops.facts.model import HostFacts, ProbeReport
    from tritonops.inventory.model import Inventory
    from tritonops.playbook.events import OnEvent
    from tritonops.playbook.inputs import RunInputs
    from tritonops.reading.sessions import ReadOptions
    from tritonops.results import GroupResult
    from tritonops.sizing.engine_plan import SizingRequest

DEFAULT_MODEL_NAME = "vllm_model"
# the option types the functions take, here too (api.DeployOptions(check=True)); loaded when first asked for
OPTION_TYPES = {"DeployOptions": "tritonops.deploy.run", "ReadOptions": "tritonops.reading.sessions",
                "SizingRequest": "tritonops.sizing.engine_plan"}


def __getattr__(name: str) -> Any:
    if name in OPTION_TYPES:
        import importlib

        return getattr(importlib.import_module(OPTION_TYPES[name]), name)
    raise AttributeError(f"module 'tritonops.api' has no attribute {name!r}")


def probe(*, inventory: Sequence[str] | str | None = None, hosts: Any = None, vars: Mapping[str, Any] | None = None,
          limit: str | None = None, forks: int = 10, accept_new_host_keys: bool = False, root: str | None = None,
          timeout: float = 60.0) -> GroupResult:
    """`tritonops probe`: each host's facts (HostFacts) as its result's payload; a host with a GPU problem failed."""
    from tritonops.facts.defaults import DEFAULT_ROOT
    from tritonops.facts.probe import probe_hosts
    from tritonops.values.numbers import real_number

    timeout = real_number(timeout, "timeout (seconds)", "timeout", maximum=3600.0)  # as --timeout
    selected = _inventory(inventory, hosts, vars, {}).select(limit)
    if not selected:
        raise InputError(f"no host matches {limit!r}", "limit")
    report = probe_hosts([host.connection for host in selected], forks, accept_new_host_keys=accept_new_host_keys,
                         disk_path=root or DEFAULT_ROOT, timeout=timeout)
    return probe_results(report)


def probe_results(report: ProbeReport) -> GroupResult:
    """A probe report as the one result shape: each host's facts its payload."""
    from tritonops.results import GroupResult, HostResult

    return GroupResult.of(HostResult(host.host, host.status, host.msg, host.facts, elapsed_s=host.elapsed_s)
                          for host in report.hosts)


def plan(*, inventory: Sequence[str] | str | None = None, hosts: Any = None, vars: Mapping[str, Any] | None = None,
         limit: str | None = None, extra_vars: Mapping[str, Any] | None = None, model: str | None = None,
         model_name: str = DEFAULT_MODEL_NAME, request: SizingRequest | None = None, metrics: bool = True,
         facts: ProbeReport | None = None, forks: int = 10, accept_new_host_keys: bool = False,
         defaults: Mapping[str, Any] | None = None, ansible=None) -> GroupResult:
    """`tritonops plan`: per host its HostDeployPlan (engine plan per model, placement, the files a deploy would
    write) as the payload; the hosts are probed unless `facts` (a saved probe report) is given. A host's status:
    ok when its plan is, else its probe's (unreachable) or failed. `defaults`: connection variables under the
    inventory's own (ansible.cfg, -u, --private-key, -b), as deploy takes them; `ansible`: how sources that need
    Ansible are read."""
    from tritonops.planning import controller_folders, load_models, model_refs, plan_hosts
    from tritonops.planning.host_values import check_host_values
    from tritonops.results import GroupResult, HostResult
    from tritonops.sizing.engine_plan import SizingRequest
    from tritonops.values.names import safe_name

    safe_name(model_name, "model name", "model_name")
    inputs = run_inputs("deploy.yml", None, (), inventory, hosts, vars, limit, extra_vars, ansible=ansible,
                        defaults=defaults)
    selected = inputs.hosts  # as deploy sees them: role defaults, -e, the connection defaults
    if not selected:
        raise InputError(f"no host matches {limit!r}", "limit")
    request = request or SizingRequest(model_ref=model or "")
    check_host_values(selected, request, model, model_name, inputs.behind_balancer)  # before any host is contacted
    refs = model_refs(selected, model, model_name)
    models, model_errors = load_models(refs)
    folders = controller_folders(selected, refs)
    if facts is None:
        from tritonops.facts.probe import probe_hosts

        facts = probe_hosts([host.connection for host in selected], forks, accept_new_host_keys=accept_new_host_keys)
    by_name = {found.host: found for found in facts.hosts}
    host_facts: dict[str, HostFacts | None] = {h.name: by_name[h.name].facts if h.name in by_name else None
                                               for h in selected}
    why = {h.name: f"{by_name[h.name].status}: {by_name[h.name].msg}" if h.name in by_name
           else "not in the probe report" for h in selected}
    probed = {h.name: by_name[h.name].status if h.name in by_name else "failed" for h in selected}
    plans = plan_hosts(selected, host_facts, request, models, model_errors, why_no_facts=why, default_model=model,
                       default_name=model_name, metrics=metrics, folders=folders,
                       behind_balancer=inputs.behind_balancer)
    return GroupResult.of(HostResult(p.host, "ok" if p.ok else (probed[p.host] if probed[p.host] != "ok" else "failed"),
                                     "; ".join(p.errors), p) for p in plans)


def deploy(*, inventory: Sequence[str] | str | None = None, hosts: Any = None, vars: Mapping[str, Any] | None = None,
           limit: str | None = None, extra_vars: Mapping[str, Any] | None = None, options: DeployOptions | None = None,
           playbook: str | None = None, roles_path: Sequence[str] = (), bench_gate: bool = False,
           on_event: OnEvent | None = None) -> DeployReport:
    """`tritonops deploy`: the deploy playbook (or `playbook`) over the hosts; `options` are the CLI's flags
    (DeployOptions: check, diff, tags, forks, break_lock, the sizing request, default_model, ...). `on_event`
    hears the run's events as they happen (the CLI's progress lines are one such subscriber)."""
    from tritonops.deploy.flow import deploy as deploy_flow
    from tritonops.deploy.run import DeployOptions
    from tritonops.values.names import safe_name

    options = options or DeployOptions()
    safe_name(options.model_name, "model name", "model_name")
    inputs = run_inputs("deploy.yml", playbook, roles_path, inventory, hosts, vars, limit, extra_vars)
    gate = None
    if bench_gate and not options.check:
        from tritonops.deploy.bench_gate import plan_bench_gate

        gate = plan_bench_gate(inputs, run_inputs("rollback.yml", None, roles_path, inventory, hosts, vars, limit,
                                                   extra_vars))
    return deploy_flow(inputs, options, on_event=on_event, gate=gate)


def rollback(*, inventory: Sequence[str] | str | None = None, hosts: Any = None, vars: Mapping[str, Any] | None = None,
             limit: str | None = None, extra_vars: Mapping[str, Any] | None = None, to: str | None = None,
             options: DeployOptions | None = None, playbook: str | None = None, roles_path: Sequence[str] = (),
             on_event: OnEvent | None = None) -> DeployReport:
    """`tritonops rollback`: each host back to the newest earlier release that passed its gate, or to `to`."""
    from dataclasses import replace

    from tritonops.deploy.rollback import rollback as rollback_flow, rollback_vars
    from tritonops.deploy.run import DeployOptions

    options = replace(options or DeployOptions(), command="rollback")
    inputs = run_inputs("rollback.yml", playbook, roles_path, inventory, hosts, vars, limit,
                         {**(extra_vars or {}), **rollback_vars(to)})
    return rollback_flow(inputs, options, on_event=on_event)


def status(*, inventory: Sequence[str] | str | None = None, hosts: Any = None, vars: Mapping[str, Any] | None = None,
           limit: str | None = None, extra_vars: Mapping[str, Any] | None = None,
           options: ReadOptions | None = None) -> GroupResult:
    """`tritonops status`: per host (task "status") its HostStatus as the payload, ok when it serves; per balancer
    (task "door") what its HAProxy sees. `extra_vars`: those the deploy had (the deployment's name, ports)."""
    from tritonops.reading.sessions import ReadOptions
    from tritonops.reading.status import status as status_flow

    inputs = run_inputs("deploy.yml", None, (), inventory, hosts, vars, limit, extra_vars)
    return status_flow(inputs, options or ReadOptions())


def run_inputs(shipped: str, playbook: str | None = None, roles_path: Sequence[str] = (), inventory=None, hosts=None,
               vars=None, limit: str | None = None, extra_vars: Mapping[str, Any] | None = None,
               ansible=None, defaults: Mapping[str, Any] | None = None) -> RunInputs:
    """A run's inputs, read once (playbook.inputs.RunInputs), for the CLI's commands and this module's: the playbook
    (`playbook`, else ./playbooks/`shipped` of a project of one's own, else the shipped one) with its roles (beside
    it, then `roles_path`, then the shipped ones), the hosts, `limit` and `extra_vars`; `defaults`: variables under
    the inventory's (the command line's -u, --private-key, -b)."""
    from tritonops.playbook.inputs import load_run_inputs, run_inputs_of
    from tritonops.playbook.shipped import playbook_path, roles_path as shipped_roles

    path = playbook or str(playbook_path(shipped))
    roles = tuple(roles_path) + shipped_roles(path)
    extra = dict(extra_vars or {})
    if hosts is None and inventory is not None and not vars:
        return load_run_inputs(path, _paths(inventory), roles_path=roles, limit=limit, extra_vars=extra,
                               ansible=ansible, defaults=defaults)
    return run_inputs_of(path, _inventory(inventory, hosts, vars, extra), roles_path=roles, limit=limit,
                         extra_vars=extra)


def _inventory(inventory, hosts, vars, extra_vars: Mapping[str, Any]) -> Inventory:
    """The hosts as an Inventory: read from `inventory`, or made from `hosts=` (fabric's objects through the
    adapter)."""
    if (inventory is None) == (hosts is None):
        raise InputError("give the hosts as inventory= (paths) or as hosts=, one of the two", "hosts")
    if inventory is not None:
        if vars:
            raise InputError("vars= goes with hosts=; an inventory holds its own variables (or pass extra_vars=)",
                             "vars")
        from tritonops.inventory import load_inventory

        return load_inventory(_paths(inventory), extra_vars=extra_vars)
    from tritonops.inventory import inventory_of_hosts

    if not _is_fabric(hosts) and isinstance(hosts, (Mapping, list, tuple)) and not hosts:
        raise InputError("hosts= names no host", "hosts")
    if _is_fabric(hosts) or (isinstance(hosts, Mapping) and any(map(_is_fabric, hosts.values()))) or \
            (isinstance(hosts, (list, tuple)) and hosts and all(map(_is_fabric, hosts))):
        return _fabric_inventory(hosts, vars, extra_vars)
    if isinstance(hosts, str) or not isinstance(hosts, (Mapping, list, tuple)):
        raise InputError("hosts= takes a mapping of names to their variables, a list of names, or fabric "
                         f"Connections / a Group (not {type(hosts).__name__})", "hosts")
    given = dict(hosts) if isinstance(hosts, Mapping) else {name: {} for name in hosts}
    return inventory_of_hosts(given, group_vars=vars, extra_vars=extra_vars)


def _fabric_inventory(hosts, vars, extra_vars: Mapping[str, Any]) -> Inventory:
    """Each Connection a host named as fabric_adapter.named_connections says, its address, port and user among its
    variables (as ansible_host, ansible_port, ansible_user: what a template sees), reached through the
    Connection itself."""
    from dataclasses import replace

    from tritonops.inventory import inventory_of_hosts
    from tritonops.transport.fabric_adapter import fabric_spec, named_connections

    connections = named_connections(hosts)
    given = {name: {"ansible_host": c.host, "ansible_port": int(c.port), "ansible_user": c.user}
             for name, c in connections.items()}
    made = inventory_of_hosts(given, group_vars=vars, extra_vars=extra_vars)
    explicit = "tritonops_known_hosts_file" in (vars or {}) or "tritonops_known_hosts_file" in extra_vars
    return replace(made, hosts=tuple(
        replace(host, connection=fabric_spec(host.name, connections[host.name],
                                             known_hosts_file=host.connection.known_hosts_file if explicit else None))
        for host in made.hosts))


def _is_fabric(value: Any) -> bool:
    """A fabric Connection or Group. fabric is never imported here: whoever made one has loaded it."""
    fabric = sys.modules.get("fabric")
    return fabric is not None and isinstance(value, (fabric.Connection, fabric.Group))


def _paths(inventory: Sequence[str] | str) -> list[str]:
    import os

    return [os.fspath(inventory)] if isinstance(inventory, (str, os.PathLike)) else [os.fspath(p) for p in inventory]
