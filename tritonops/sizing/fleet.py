"""A plan per inventory host: each host's probed GPUs, its own overrides, one model.

Pure: facts and variables in, `HostPlan`s out. Per-host overrides are the inventory
variables in HOST_VARS; a bad value is that host's error, not the whole run's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tritonops.errors import InputError, TritonopsError
from tritonops.facts.model import HostFacts
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import EnginePlan, SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_facts
from tritonops.sizing.model_spec import ModelSpec
from tritonops.sizing.request_numbers import CHECKS, request_number

# inventory variable -> SizingRequest field (numbers checked by request_numbers)
HOST_VARS = {
    "tritonops_vllm_version": "vllm_version",
    "tritonops_gpu_memory_utilization": "gpu_memory_utilization",
    "tritonops_max_model_len": "max_model_len",
    "tritonops_tensor_parallel_size": "tensor_parallel_size",
    "tritonops_max_num_seqs": "max_num_seqs",
}
MODEL_VAR = "tritonops_model"


@dataclass(frozen=True)
class HostPlan:
    host: str
    model: str
    plan: EnginePlan | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.plan is not None and self.plan.fits


def host_request(base: SizingRequest, host_vars: dict, where: dict[str, str] | None = None) -> SizingRequest:
    """The base request with this host's overrides; InputError naming the variable and where it
    was set (`where`: variable -> 'file:line')."""
    changes = {}
    for var, field in HOST_VARS.items():
        if var not in host_vars or host_vars[var] is None:
            continue
        value, at = host_vars[var], (where or {}).get(var)
        if field not in CHECKS:
            if not isinstance(value, str):
                raise InputError(f"{var} must be a string, not {value!r} (quote it: '0.10.2')", at)
            changes[field] = value
        else:
            changes[field] = request_number(field, value, at, name=var)
    if MODEL_VAR in host_vars and host_vars[MODEL_VAR]:
        changes["model_ref"] = str(host_vars[MODEL_VAR])
    return replace(base, **changes)


def model_ref_for(default_ref: str | None, host_vars: dict) -> str | None:
    return str(host_vars.get(MODEL_VAR) or default_ref or "") or None


def plan_for_hosts(facts_by_host: dict[str, HostFacts | None], host_vars: dict[str, dict],
                   models: dict[str, ModelSpec], base: SizingRequest,
                   default_model: str | None, model_errors: dict[str, str] | None = None,
                   var_where: dict[str, dict[str, str]] | None = None) -> list[HostPlan]:
    """`models` maps every model reference the hosts use to its spec (`model_errors` says why
    one could not be read); `facts_by_host` None means the host could not be probed;
    `var_where` says where each host's variables were set ('file:line'), for errors."""
    plans = []
    for host, facts in facts_by_host.items():
        variables = host_vars.get(host, {})
        ref = model_ref_for(default_model, variables)
        if ref is None:
            plans.append(HostPlan(host, "", error="no model: pass --model or set tritonops_model"))
            continue
        if facts is None:
            plans.append(HostPlan(host, ref, error="no facts (host not probed)"))
            continue
        if ref not in models:
            plans.append(HostPlan(host, ref, error=(model_errors or {}).get(ref, f"model {ref} not loaded")))
            continue
        try:
            gpus = gpu_spec_from_facts(facts, f"probe facts of {host}")
            if gpus is None:
                plans.append(HostPlan(host, ref, error=facts.nvidia.error or "no NVIDIA GPU found"))
                continue
            request = host_request(replace(base, model_ref=ref), variables, (var_where or {}).get(host))
            request = replace(request, host_ram_bytes=facts.system.ram_total_bytes)
            plans.append(HostPlan(host, ref, plan=size_engine(models[ref], gpus, request)))
        except TritonopsError as err:
            plans.append(HostPlan(host, ref, error=str(err)))
    return plans
