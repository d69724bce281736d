"""dtype and quantization against the GPU's compute capability (reference 1.8, 1.10)."""

from __future__ import annotations

from tritonops.sizing.engine_plan import Reason
from tritonops.sizing.model_spec import FLOAT16_NOT_SUPPORTED, ModelSpec
from tritonops.sizing.versions import VllmProfile

_ALIASES = {"half": "float16", "fp16": "float16", "bf16": "bfloat16", "float": "float32", "fp32": "float32"}
KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")


def normalise_dtype(dtype: str) -> str:
    return _ALIASES.get(dtype.lower(), dtype.lower())


def resolve_dtype(model: ModelSpec, cc: tuple[int, int],
                  requested: str | None) -> tuple[str, Reason | None, str | None]:
    """(dtype, reason, problem). `problem` is what vLLM would refuse (and then no reason), else None."""
    cc_text = f"{cc[0]}.{cc[1]}"
    half_only = model.quantization is not None and model.quantization.method in ("awq", "gptq") and cc < (8, 0)
    if requested and normalise_dtype(requested) != "auto":
        dtype = normalise_dtype(requested)
        if dtype not in ("float16", "bfloat16", "float32"):
            return dtype, None, f"dtype '{requested}' is not one of auto, float16, bfloat16, float32"
        if dtype == "bfloat16" and cc < (8, 0):
            return dtype, None, (f"Bfloat16 is only supported on GPUs with compute capability of at least 8.0 "
                                 f"(this GPU: {cc_text}); use float16")
        if dtype == "float16" and model.model_type in FLOAT16_NOT_SUPPORTED:
            return dtype, None, (f"{model.model_type} models do not support float16 in vLLM; use bfloat16 or "
                                 "float32")
        if half_only and dtype != "float16":
            return dtype, None, (f"{model.quantization.method} kernels below compute capability 8.0 run float16 "
                                 "only")
        return dtype, Reason("dtype", dtype, "as requested"), None

    native = model.torch_dtype
    if half_only:
        return "float16", Reason("dtype", "float16",
                                 f"{model.quantization.method} kernels below CC 8.0 run float16 only"), None
    if cc < (8, 0):
        if model.model_type in FLOAT16_NOT_SUPPORTED:
            return "float32", Reason("dtype", "float32", f"no bfloat16 below compute capability 8.0 (GPU {cc_text}) "
                                     f"and {model.model_type} refuses float16 (weights and KV cache take twice the "
                                     "memory)"), None
        if native in ("bfloat16", "float32"):
            return "float16", Reason("dtype", "float16", f"the checkpoint is {native}, but compute capability "
                                     f"{cc_text} < 8.0 has no bfloat16 (vLLM would refuse or fall back)"), None
        return "float16", Reason("dtype", "float16", "the checkpoint's dtype"), None
    if native == "float32":
        return "bfloat16", Reason("dtype", "bfloat16",
                                  "float32 checkpoint served in 16 bits (what vLLM's auto picks)"), None
    return native, Reason("dtype", native, f"the checkpoint's dtype, supported on compute capability {cc_text}"), None


def quantization_method_in_use(model: ModelSpec, cc: tuple[int, int]) -> str | None:
    """The kernel family vLLM picks: Marlin variants on CC >= 8.0 for AWQ/GPTQ."""
    q = model.quantization
    if q is None:
        return None
    method = q.method
    if method in ("awq", "gptq") and cc >= (8, 0):
        return f"{method}_marlin"
    return method


def quantization_problem(model: ModelSpec, cc: tuple[int, int], profile: VllmProfile) -> str | None:
    method = quantization_method_in_use(model, cc)
    if method is None:
        return None
    need = profile.quantization_min_cc(method)
    if need is None:
        if method in ("awq_marlin", "gptq_marlin"):
            need = profile.quantization_min_cc(method.split("_")[0])
        if need is None:
            return f"quantization method '{method}' is not known to vLLM {profile.version}"
    if cc < need:
        return (f"The quantization method {method} is not supported for the current GPU. Minimum capability: "
                f"{need[0]}{need[1]}. Current capability: {cc[0]}{cc[1]}.")
    return None


def kv_cache_dtype_problem(kv_cache_dtype: str, cc: tuple[int, int]) -> str | None:
    if kv_cache_dtype not in KV_CACHE_DTYPES:
        return f"kv_cache_dtype '{kv_cache_dtype}' is not one of {', '.join(KV_CACHE_DTYPES)}"
    if kv_cache_dtype != "auto" and cc < (8, 0):
        return f"an fp8 KV cache needs compute capability 8.0 or newer (attention backends), not {cc[0]}.{cc[1]}"
    return None
