"""Sizing: choose vLLM engine arguments from a model and the GPUs it gets (pure code).

Entry point: `size_engine(model_spec, gpu_spec, request) -> EnginePlan`; a fleet of hosts is
`tritonops.planning`. `model_source.load_model_spec` is the only I/O.
"""

import importlib

# Where each name lives. Loaded on first use (PEP 562), so `tritonops.sizing.versions` and the other
# small modules the CLI's parser reads do not bring the whole engine (and pydantic) with them.
_EXPORTS = {
    "size_engine": "chooser",
    "Alternative": "engine_plan", "EnginePlan": "engine_plan", "SizingRequest": "engine_plan",
    "GpuSpec": "gpu_spec",
    "ModelSpec": "model_spec",
    "DEFAULT_VLLM_VERSION": "versions", "VllmProfile": "versions", "profile_for": "versions",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
