"""Hosts that share `tritonops_cluster` run one model as a pipeline across them (issue #28): the fewest of
them (in inventory order) that hold it, or `tritonops_pipeline_parallel_size` of them, one stage each, the
first as the head. The cluster is planned as one unit: a member without facts, with other GPUs or with any
error fails every member's plan (the other hosts of the run go on), and a host the pipeline does not need is
said to be spare. Pure: given the per-host planner, which sizes and renders each member as any host.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from tritonops.errors import InputError, TritonopsError
from tritonops.facts.model import HostFacts
from tritonops.planning.cluster import ClusterError, ClusterHost, check_members, form_cluster
from tritonops.modes.kserve import KSERVE
from tritonops.planning.entries import host_where
from tritonops.planning.gpu_choice import GPUS_VAR, allowed_gpus, restrict_facts
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_facts
from tritonops.sizing.pipeline import MAX_PIPELINE_HOSTS
from tritonops.sizing.request_numbers import request_number
from tritonops.values.names import safe_name
from tritonops.values.network import interface_names, node_address

CLUSTER_VAR = "tritonops_cluster"
PIPELINE_VAR = "tritonops_pipeline_parallel_size"
ADDRESS_VAR = "tritonops_node_address"      # where the other members reach this one (default: an IP ansible_host)
INTERFACE_VAR = "tritonops_nccl_interface"  # NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME (default: their choice)
OBJECT_STORE_VAR = "tritonops_ray_object_store_bytes"
MIN_OBJECT_STORE_BYTES = 75 << 20  # Ray refuses a smaller object store

PlanOne = Callable[[object, "HostFacts | None", SizingRequest], object]   # planning.host_plan.plan_host, bound


def cluster_of(host) -> str | None:
    value = host.vars.get(CLUSTER_VAR)
    if value in (None, ""):
        return None
    return safe_name(value, CLUSTER_VAR, host_where(host, CLUSTER_VAR))


def plan_cluster(name: str, members: Sequence, facts_by_host: Mapping[str, HostFacts | None],
                 request: SizingRequest, plan_one: PlanOne, why_no_facts: Mapping[str, str] | None = None) -> list:
    """Every member's HostDeployPlan, in the members' order, each carrying the cluster when it formed."""
    def failed(why: str, plans: Sequence | None = None) -> list:
        found = {p.host: p for p in plans or ()}
        return [replace(found[h.name], error=f"cluster {name}: {why}", files={}) if h.name in found else
                _bare(plan_one, h, replace(request, pipeline_parallel_size=None), f"cluster {name}: {why}")
                for h in members]

    try:
        hosts = [_cluster_host(h, facts_by_host.get(h.name), (why_no_facts or {}).get(h.name)) for h in members]
        head = members[0]
        given = head.vars.get(PIPELINE_VAR)
        if given not in (None, ""):
            sizes = [request_number("pipeline_parallel_size", given, host_where(head, PIPELINE_VAR), PIPELINE_VAR)]
        else:
            sizes = list(range(2, min(len(members), MAX_PIPELINE_HOSTS) + 1))
        check_members(name, hosts, sizes[0] if given not in (None, "") else len(hosts))   # before any sizing
    except TritonopsError as err:
        why = str(err).removeprefix(f"cluster {name}: ")
        return failed(why)
    head_plan, pp = None, sizes[-1]
    for size in sizes:   # the fewest hosts that hold the model
        head_plan = plan_one(head, facts_by_host[head.name], replace(request, pipeline_parallel_size=size))
        if head_plan.ok:
            pp = size
            break
    if not head_plan.ok:
        return failed(f"does not fit on {pp} hosts: " + "; ".join(head_plan.errors), [head_plan])
    if len(head_plan.models) != 1:
        return failed(f"a cluster serves one model version, not {len(head_plan.models)}", [head_plan])
    if head_plan.frontend != KSERVE.name:
        return failed(f"the {head_plan.frontend} serving mode does not run a pipeline across hosts yet (Triton's "
                      "KServe endpoints do)", [head_plan])
    try:
        object_store_bytes(head)
    except InputError as err:
        return failed(str(err), [head_plan])
    engine = head_plan.models[0].plan
    try:
        cluster = form_cluster(name, hosts, engine.tensor_parallel_size, sum(engine.layer_split), pp)
    except ClusterError as err:
        return failed(str(err).removeprefix(f"cluster {name}: "), [head_plan])
    sized = replace(request, pipeline_parallel_size=pp)
    plans = [head_plan] + [plan_one(h, facts_by_host[h.name], sized) for h in members[1:pp]]
    broken = [p for p in plans if not p.ok]
    if broken:
        return failed(f"{broken[0].host}: " + "; ".join(broken[0].errors), plans)
    spare = [_bare(plan_one, h, request, f"spare: cluster {name} runs on {pp} hosts ({PIPELINE_VAR} {pp}); "
                   f"{h.name} is not needed") for h in members[pp:]]
    return [replace(p, cluster=cluster) for p in plans] + spare


def object_store_bytes(host) -> int | None:
    """`tritonops_ray_object_store_bytes` of the cluster's head: every node's Ray object store (None: Ray's
    default, 30% of the host's memory; small hosts and the lab set it)."""
    value = host.vars.get(OBJECT_STORE_VAR)
    if value in (None, ""):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_OBJECT_STORE_BYTES:
        raise InputError(f"{OBJECT_STORE_VAR} must be a whole number of bytes of at least {MIN_OBJECT_STORE_BYTES} "
                         f"(75 MiB), not {value!r}", host_where(host, OBJECT_STORE_VAR) or host.name)
    return value


def _bare(plan_one: PlanOne, host, request: SizingRequest, error: str):
    """A plan that says `error` and touches nothing (made by the host planner, so it has the host's shape)."""
    plan = plan_one(host, None, request)
    return replace(plan, error=error, files={})


def _cluster_host(host, facts: HostFacts | None, why_no_facts: str | None) -> ClusterHost:
    if facts is None:
        raise ClusterError(f"{host.name} has no facts ({why_no_facts or 'not probed'}): the cluster needs every member")
    restricted = restrict_facts(facts, allowed_gpus(host.vars.get(GPUS_VAR), host_where(host, GPUS_VAR)))
    gpus = gpu_spec_from_facts(restricted, f"probe facts of {host.name}")
    if gpus is None:
        raise ClusterError(f"{host.name} has no NVIDIA GPU")
    given = host.vars.get(ADDRESS_VAR)
    if given not in (None, ""):
        address = node_address(given, host_where(host, ADDRESS_VAR) or host.name)
    else:
        fallback = host.vars.get("ansible_host") or host.name
        try:
            address = node_address(fallback, host.name)
        except InputError:
            raise ClusterError(f"{host.name}: set {ADDRESS_VAR} to the IP address the other members reach it at "
                               f"(ansible_host {fallback!r} is not one)") from None
    interface = host.vars.get(INTERFACE_VAR)
    if interface not in (None, ""):
        interface = interface_names(interface, host_where(host, INTERFACE_VAR) or host.name)
    return ClusterHost(host.name, address, gpus, interface or None)
