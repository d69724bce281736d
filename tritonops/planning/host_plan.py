"""`plan_hosts`: every host's models sized for its probed GPUs, checked, and rendered as the
model repository it would get, naming the weights where they will be on that host: the bytes
`plan` shows are the bytes `deploy` writes. Pure given the loaded models and controller folders;
a model that does not fit is that host's error, never the whole run's. A bad value is found by
planning.host_values, which `plan` and `deploy` run over every host before contacting any (exit 5);
a caller that has not is told it as that host's error too."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from tritonops.errors import TritonopsError
from tritonops.facts.model import HostFacts
from tritonops.planning.bind import WILDCARD
from tritonops.planning.cluster import Cluster
from tritonops.planning.cluster_plan import cluster_of, plan_cluster
from tritonops.planning.deployment import deployment_of
from tritonops.sizing.explain import why_it_does_not_fit
from tritonops.planning.entries import ModelEntry
from tritonops.planning.gpu_choice import place_replicas, restrict_facts
from tritonops.planning.host_values import host_values
from tritonops.modes.choice import DEFAULT as DEFAULT_MODE
from tritonops.planning.placement import Placement
from tritonops.planning.host_memory import Engine, host_ram_check, shared_gpu_problem
from tritonops.planning.weights_spec import ControllerFolders, WeightsSpec, weights_spec
from tritonops.render.model_repository import RepositoryModel, render_model_repository
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import EnginePlan, SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_facts
from tritonops.sizing.model_spec import ModelSpec
from tritonops.sizing.engine_arg_keys import refusal, refused_keys
from tritonops.sizing.versions import parse_version


@dataclass(frozen=True)
class ModelInstancePlan:
    """One version of one Triton model: one vLLM engine, its plan and the model.json it gets."""

    name: str
    version: int
    model: str                       # the model reference (Hugging Face id or directory)
    plan: EnginePlan | None = None
    model_json: dict = field(default_factory=dict)   # as rendered: "model" is the weights' folder on the host
    error: str | None = None
    weights: WeightsSpec | None = None               # where the weights come from and land (when planned)

    @property
    def ok(self) -> bool:
        return self.error is None and self.plan is not None and self.plan.fits


@dataclass(frozen=True)
class HostDeployPlan:
    """What one host should run. `files` is the model repository (path relative to
    `model_repository/` -> text), filled only when the whole host is ok: a host with any error
    is not to be touched."""

    host: str
    models: tuple[ModelInstancePlan, ...] = ()
    files: dict = field(default_factory=dict)
    error: str | None = None         # host-level: no facts, no GPU, bad variables, shared GPUs, RAM
    notes: tuple[str, ...] = ()
    placement: Placement | None = None  # the host's Triton containers (replicas): GPUs and ports (when planned)
    bind: str = WILDCARD             # the address the replicas' ports bind to (planning.bind.replica_bind)
    frontend: str = DEFAULT_MODE     # the serving mode (tritonops_frontend, checked: tritonops/modes)
    cluster: Cluster | None = None   # the Ray cluster this host is a member of (a pipeline across hosts)

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.models) and all(m.ok for m in self.models)

    @property
    def errors(self) -> list[str]:
        """Every error, the host's first, each model's named when there are several."""
        found = [self.error] if self.error else []
        several = len(self.models) > 1
        for m in self.models:
            why = m.error or (why_it_does_not_fit(m.plan) if m.plan is not None and not m.plan.fits else None)
            if why:
                found.append(f"{m.name} version {m.version}: {why}" if several else why)
        return found


def plan_hosts(hosts: Iterable, facts_by_host: Mapping[str, HostFacts | None], request: SizingRequest,
               models: Mapping[str, ModelSpec], model_errors: Mapping[str, str] | None = None,
               why_no_facts: Mapping[str, str] | None = None, default_model: str | None = None,
               default_name: str = "vllm_model", metrics: bool = True,
               folders: ControllerFolders = ControllerFolders(),
               behind_balancer: bool = False) -> list[HostDeployPlan]:
    """One `HostDeployPlan` per host, in the hosts' order.

    `hosts`: inventory hosts (name, vars, where each var was set); `facts_by_host`: probe facts by
    host name, None (or absent) when the host has none, `why_no_facts` saying why; `request`: the
    base request (flags), which each host's variables and model entries override; `models`: every
    model reference in use, loaded (`model_errors`: why one could not be); `folders`: the controller
    folders among the references (planning.models.controller_folders; none: every reference is a hub repo);
    `behind_balancer`: the inventory has balancers, so the replicas bind privately (planning.bind)."""
    def plan_one(host, facts: HostFacts | None, request: SizingRequest) -> HostDeployPlan:
        return plan_host(host, facts, request, models, model_errors or {}, (why_no_facts or {}).get(host.name),
                         default_model, default_name, metrics, folders, behind_balancer)

    hosts = list(hosts)
    clusters: dict[str, list] = {}
    planned: dict[str, HostDeployPlan] = {}
    for host in hosts:
        try:
            name = cluster_of(host)
        except TritonopsError as err:
            planned[host.name] = HostDeployPlan(host.name, error=str(err))
            continue
        if name is None:
            planned[host.name] = plan_one(host, facts_by_host.get(host.name), request)
        else:
            clusters.setdefault(name, []).append(host)
    for name, members in clusters.items():   # a pipeline across hosts: planned as one unit
        planned.update((plan.host, plan) for plan in plan_cluster(name, members, facts_by_host, request, plan_one,
                                                                  why_no_facts))
    return [planned[host.name] for host in hosts]


def plan_host(host, facts: HostFacts | None, request: SizingRequest, models: Mapping[str, ModelSpec],
              model_errors: Mapping[str, str], why_no_facts: str | None, default_model: str | None,
              default_name: str = "vllm_model", metrics: bool = True,
              folders: ControllerFolders = ControllerFolders(), behind_balancer: bool = False) -> HostDeployPlan:
    name = host.name
    try:
        values = host_values(host, request, default_model, default_name, behind_balancer)
    except TritonopsError as err:  # the CLI refuses these before any host is contacted (check_host_values)
        return HostDeployPlan(name, error=str(err))
    entries, allowed = values.entries, values.allowed
    if not entries:
        return HostDeployPlan(name, error="no model: pass --model or set tritonops_model")
    unplanned = tuple(ModelInstancePlan(e.name, v, e.model_ref) for e in entries for v in e.versions)
    if facts is None:
        return HostDeployPlan(name, unplanned, error=why_no_facts or "no facts (host not probed)")
    try:
        facts = restrict_facts(facts, allowed)
        gpus = gpu_spec_from_facts(facts, f"probe facts of {name}")
        if gpus is None:
            return HostDeployPlan(name, unplanned, error=facts.nvidia.error or "no NVIDIA GPU found")
        base = replace(values.request, host_ram_bytes=facts.system.ram_total_bytes)
    except TritonopsError as err:
        return HostDeployPlan(name, unplanned, error=str(err))
    instances = tuple(inst for entry in entries
                      for inst in _plan_entry(entry, base, gpus, models, model_errors))
    if not all(i.ok for i in instances):
        return HostDeployPlan(name, instances)
    engines = [Engine(f"{i.name} version {i.version}", _given_util(entry, base), i.plan.tensor_parallel_size,
                      i.plan.cpu_kv_cache_bytes)
               for entry in entries for i in instances if i.name == entry.name and i.version in entry.versions]
    problem = shared_gpu_problem(engines, gpus)
    ram_problem, ram_note = host_ram_check(engines, facts.system.ram_total_bytes)
    notes = (ram_note,) if ram_note else ()
    if problem or ram_problem:
        return HostDeployPlan(name, instances, error="; ".join(p for p in (problem, ram_problem) if p), notes=notes)
    try:
        placement = place_replicas(facts, max(i.plan.tensor_parallel_size for i in instances), allowed,
                                   values.replicas, values.ports, values.stride, values.boot_first)
    except TritonopsError as err:
        return HostDeployPlan(name, instances, error=str(err), notes=notes)
    notes += placement.reasons
    try:
        instances = _with_weights(host, instances, folders)
    except TritonopsError as err:
        return HostDeployPlan(name, instances, error=str(err), notes=notes)
    refused = values.mode.plan_problem(tuple((i.name, dict(i.model_json)) for i in instances))
    if refused:
        return HostDeployPlan(name, instances, error=refused, notes=notes)
    files = render_model_repository((RepositoryModel(i.name, i.version, i.model_json) for i in instances),
                                    metrics=metrics)
    return HostDeployPlan(name, instances, files=files, notes=notes, placement=placement, bind=values.bind,
                          frontend=values.mode.name)


def _with_weights(host, instances: tuple[ModelInstancePlan, ...],
                  folders: ControllerFolders) -> tuple[ModelInstancePlan, ...]:
    """Each instance with its weights planned and model.json naming their folder on the host (vLLM
    loads them from there)."""
    root, deployment = deployment_of(host)
    planned = []
    for instance in instances:
        weights = weights_spec(instance.model, host.vars, root=root, deployment=deployment, folders=folders)
        planned.append(replace(instance, weights=weights, model_json={**instance.model_json, "model": weights.folder}))
    return tuple(planned)


def _given_util(entry: ModelEntry, base: SizingRequest) -> float | None:
    return entry.overrides.get("gpu_memory_utilization", base.gpu_memory_utilization)


def _plan_entry(entry: ModelEntry, base: SizingRequest, gpus, models: Mapping[str, ModelSpec],
                model_errors: Mapping[str, str]) -> list[ModelInstancePlan]:
    ref = entry.model_ref
    if ref not in models:
        error = model_errors.get(ref, f"model {ref} not loaded")
        return [ModelInstancePlan(entry.name, v, ref, error=error) for v in entry.versions]
    try:
        request = replace(base, model_ref=ref, **entry.overrides)
        plan = size_engine(models[ref], gpus, request)
    except TritonopsError as err:
        return [ModelInstancePlan(entry.name, v, ref, error=str(err)) for v in entry.versions]
    # a plan that does not fit says why in its problems; `ok` is False through plan.fits
    model_json = {**plan.model_json, **entry.engine_args}
    refused = [key for key in refused_keys(model_json, parse_version(plan.vllm_version)) if key not in entry.vouched]
    error = None
    if refused:
        label, origin = entry.arg_origin(refused[0])
        where = f"{origin}: " if origin else ""
        error = f"{where}{label}: " + refusal(refused[0], plan.vllm_version, parse_version(plan.vllm_version))
    return [ModelInstancePlan(entry.name, v, ref, plan=plan, model_json=model_json, error=error)
            for v in entry.versions]
