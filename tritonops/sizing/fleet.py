"""A plan per inventory host: each host's probed GPUs, its own overrides, one model.

Pure: facts and variables in, `HostPlan`s out. Per-host overrides are the inventory
variables in HOST_VARS; a bad value is that host's error, not the whole run's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tritonops.errors import TritonopsError
from tritonops.facts.model import HostFacts
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import EnginePlan, SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_facts
from tritonops.sizing.model_spec import ModelSpec

# inventory variable -> (SizingRequest field, type)
HOST_VARS = {
    "tritonops_vllm_version": ("vllm_version", str),
    "tritonops_gpu_memory_utilization": ("gpu_memory_utilization", float),
    "tritonops_max_model_len": ("max_model_len", int),
    "tritonops_tensor_parallel_size": ("tensor_parallel_size", int),
    "tritonops_max_num_seqs": ("max_num_seqs", int),
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


def host_request(base: SizingRequest, host_vars: dict) -> SizingRequest:
    """The base request with this host's overrides; raises ValueError naming the variable."""
    changes = {}
    for var, (field, kind) in HOST_VARS.items():
        if var not in host_vars or host_vars[var] is None:
            continue
        value = host_vars[var]
        if isinstance(value, bool) or (kind is not str and isinstance(value, str) and not value.strip()):
            raise ValueError(f"{var} must be a {kind.__name__}, got {value!r}")
        try:
            changes[field] = kind(value)
        except (TypeError, ValueError):
            raise ValueError(f"{var} must be a {kind.__name__}, got {value!r}") from None
    if MODEL_VAR in host_vars and host_vars[MODEL_VAR]:
        changes["model_ref"] = str(host_vars[MODEL_VAR])
    return replace(base, **changes)


def model_ref_for(default_ref: str | None, host_vars: dict) -> str | None:
    return str(host_vars.get(MODEL_VAR) or default_ref or "") or None


def plan_for_hosts(facts_by_host: dict[str, HostFacts | None], host_vars: dict[str, dict],
                   models: dict[str, ModelSpec], base: SizingRequest,
                   default_model: str | None, model_errors: dict[str, str] | None = None) -> list[HostPlan]:
    """`models` maps every model reference the hosts use to its spec (`model_errors` says why
    one could not be read); `facts_by_host` None means the host could not be probed."""
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
        gpus = gpu_spec_from_facts(facts)
        if gpus is None:
            why = facts.nvidia.error or "no NVIDIA GPU found"
            plans.append(HostPlan(host, ref, error=why))
            continue
        try:
            request = host_request(replace(base, model_ref=ref), variables)
            request = replace(request, host_ram_bytes=facts.system.ram_total_bytes)
            plans.append(HostPlan(host, ref, plan=size_engine(models[ref], gpus, request)))
        except (ValueError, TritonopsError) as err:
            plans.append(HostPlan(host, ref, error=str(err)))
    return plans
