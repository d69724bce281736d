"""`<model>/1/model.json`: the engine arguments Triton's vLLM backend passes to
`AsyncEngineArgs(**...)` (reference/triton-vllm.md 1.4)."""

from __future__ import annotations

import json

from tritonops.sizing.engine_plan import EnginePlan
from tritonops.sizing.versions import profile_for, unknown_model_json_keys


def render_model_json(plan: EnginePlan, model: str | None = None) -> str:
    """JSON text with the plan's engine arguments in their fixed order; `model` replaces the
    "model" value (e.g. the weights' path on the host). Booleans and numbers stay JSON types:
    a string "false" would be truthy to vLLM."""
    args = dict(plan.model_json)
    if model is not None:
        args["model"] = model
    refused = unknown_model_json_keys(args, profile_for(plan.vllm_version, _cc(plan)))
    if refused:  # model_json_for never does this; a hand-edited plan might
        raise ValueError(f"vLLM {plan.vllm_version} does not accept {', '.join(refused)}")
    return json.dumps(args, indent=2) + "\n"


def _cc(plan: EnginePlan) -> tuple[int, int]:
    major, minor = plan.compute_capability.split(".")
    return int(major), int(minor)
