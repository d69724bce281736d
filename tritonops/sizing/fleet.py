"""A host's sizing overrides: the inventory variables in HOST_VARS, checked, applied to a request.

Pure. The per-host flow (entries, sizing, repository) is `tritonops.planning`.
"""

from __future__ import annotations

from dataclasses import replace

from tritonops.errors import InputError
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.request_numbers import CHECKS, request_number

# inventory variable -> SizingRequest field (numbers checked by request_numbers)
HOST_VARS = {
    "tritonops_vllm_version": "vllm_version",
    "tritonops_gpu_memory_utilization": "gpu_memory_utilization",
    "tritonops_max_model_len": "max_model_len",
    "tritonops_tensor_parallel_size": "tensor_parallel_size",
    "tritonops_max_num_seqs": "max_num_seqs",
    "tritonops_swap_space_gib": "swap_space_gib",
}
MODEL_VAR = "tritonops_model"


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
