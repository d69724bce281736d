"""Sizing: choose vLLM engine arguments from a model and the GPUs it gets (pure code).

Entry point: `size_engine(model_spec, gpu_spec, request) -> EnginePlan`; a fleet of hosts is
`tritonops.planning`. `model_source.load_model_spec` is the only I/O.
"""

from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import Alternative, EnginePlan, SizingRequest
from tritonops.sizing.gpu_spec import GpuSpec
from tritonops.sizing.model_spec import ModelSpec
from tritonops.sizing.versions import DEFAULT_VLLM_VERSION, VllmProfile, profile_for

__all__ = ["Alternative", "DEFAULT_VLLM_VERSION", "EnginePlan", "GpuSpec", "ModelSpec", "SizingRequest",
           "VllmProfile", "profile_for", "size_engine"]
