"""The model.json keys each vLLM version accepts, as data, and the check every model.json
passes before any host is touched.

Triton's vLLM backend calls `AsyncEngineArgs(**model_json)`: a key the installed vLLM does not
know raises `TypeError: ... unexpected keyword argument '<key>'`, the model is UNAVAILABLE and
the server exits (reference/triton-vllm.md 1.4, 5.x). So every key, the ones tritonops writes
and the ones users add (`tritonops_engine_args`), is checked against the pinned version here.

Each key maps to (first version that accepts it, first version that no longer does / None), as
PEP 440 versions: a pre-release of a bound (0.12.0rc1) falls below it (versions.py says why).
Sources, per key below:
- swap_space: `--swap-space` present up to 0.16.0, gone in 0.18.0 (no `swap_space` in
  vllm/engine/arg_utils.py or vllm/config/cache.py; reference/vllm-memory.md 1.1). 0.17 was not
  read: taken as gone.
- disable_log_requests: removed in 0.10.1, replaced by enable_log_requests (vllm-project/vllm#23283,
  hiyouga/LlamaFactory#9503; reference/triton-vllm.md 1.4).
- kv_offloading_size, kv_offloading_backend: added by vllm-project/vllm#27621 ("cmdline argument
  parsing for KV cache offloading modules", merged 2025-10-28, after 0.11.0 was released); the
  first release that has them (0.11.1) was not read, so 0.12.0 is taken as the first. In the stored
  vllm/config/cache.py (CacheConfig): `kv_offloading_size: float | None` "Size of the KV cache
  offloading buffer in GiB. When TP > 1, this is the total buffer size summed across all TP ranks",
  `kv_offloading_backend: Literal["native", "lmcache"]`; "native" is the default only since
  vllm-project/vllm#32421 (2026-01-15), so tritonops always writes the backend.
- distributed_executor_backend: from 0.5.1 (as before in versions.py).
- The other keys are the `EngineArgs`/`AsyncEngineArgs` fields tritonops, NVIDIA's samples and
  the lab's stand-in use (tritonops/lab/wheelhouse/.../arg_utils.py.txt, a vLLM 0.10-era list);
  they are not dated: accepted for every version tritonops sizes (0.4+). The check still catches
  typos, keys tritonops does not know, and the dated removals above. A key missing here is added
  here, with its versions and the source that shows them.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import Version

from tritonops.errors import InputError
from tritonops.text import close_matches

_ALWAYS: tuple[Version, Version | None] = (Version("0.0.0"), None)

ENGINE_ARG_SPANS: dict[str, tuple[Version, Version | None]] = {
    **{key: _ALWAYS for key in (
        "model", "served_model_name", "tokenizer", "tokenizer_mode", "tokenizer_revision", "revision",
        "code_revision", "trust_remote_code", "download_dir", "load_format", "config_format", "dtype",
        "kv_cache_dtype", "seed", "max_model_len",
        "pipeline_parallel_size", "tensor_parallel_size", "max_parallel_loading_workers", "block_size",
        "enable_prefix_caching", "disable_sliding_window", "cpu_offload_gb", "gpu_memory_utilization",
        "max_num_batched_tokens", "max_num_seqs", "max_logprobs", "disable_log_stats", "rope_scaling",
        "rope_theta", "hf_overrides", "quantization", "enforce_eager", "disable_custom_all_reduce",
        "limit_mm_per_prompt", "mm_processor_kwargs", "enable_lora", "enable_lora_bias", "max_loras",
        "max_lora_rank", "fully_sharded_loras", "max_cpu_loras", "lora_dtype", "device",
        "num_gpu_blocks_override", "ignore_patterns", "enable_chunked_prefill", "speculative_config",
        "scheduling_policy", "compilation_config", "kv_transfer_config", "generation_config",
        "override_generation_config", "enable_sleep_mode", "model_impl", "calculate_kv_scales",
        "skip_tokenizer_init", "enable_prompt_embeds", "allowed_local_media_path", "hf_config_path",
        "enable_expert_parallel", "data_parallel_size", "max_num_partial_prefills",
        "max_long_partial_prefills", "long_prefill_token_threshold", "logprobs_mode",
        "reasoning_parser", "async_scheduling", "disable_cascade_attn", "hf_token",
        "otlp_traces_endpoint", "collect_detailed_traces", "worker_cls", "worker_extension_cls",
        "kv_events_config", "additional_config", "use_tqdm_on_load", "pt_load_map_location")},
    "distributed_executor_backend": (Version("0.5.1"), None),
    "swap_space": (Version("0.0.0"), Version("0.17.0")),
    "disable_log_requests": (Version("0.0.0"), Version("0.10.1")),
    "enable_log_requests": (Version("0.10.1"), None),
    "kv_offloading_size": (Version("0.12.0"), None),
    "kv_offloading_backend": (Version("0.12.0"), None),
}


def accepts(key: str, version: Version) -> bool:
    span = ENGINE_ARG_SPANS.get(key)
    if span is None:
        return False
    first, gone = span
    return version >= first and (gone is None or version < gone)


def refused_keys(keys: Iterable[str], version: Version) -> list[str]:
    """The keys `version`'s AsyncEngineArgs would refuse (or that tritonops does not know)."""
    return [key for key in keys if not accepts(key, version)]


def refusal(key: str, version_text: str, version: Version) -> str:
    """Why `key` cannot go into model.json for this version, with what to use instead."""
    span = ENGINE_ARG_SPANS.get(key)
    if span is not None:
        first, gone = span
        if gone is not None and version >= gone:
            after = "; use enable_log_requests" if key == "disable_log_requests" else ""
            return (f"vLLM {version_text} does not accept engine argument '{key}' (removed in "
                    f"{gone}{after})")
        return (f"vLLM {version_text} does not accept engine argument '{key}' (first in "
                f"{first})")
    known = [k for k in ENGINE_ARG_SPANS if accepts(k, version)]
    close = close_matches(key, known, n=2)
    hint = f"; did you mean {' or '.join(close)}?" if close else \
        " (tritonops checks model.json against the engine arguments it knows for each vLLM version)"
    return f"vLLM {version_text} has no engine argument '{key}'{hint}"


def check_engine_args(keys: Iterable[str], version_text: str, version: Version, where: str | None = None) -> None:
    """InputError for the first key `version` refuses, naming the key and the version."""
    for key in keys:
        if not accepts(key, version):
            raise InputError(refusal(key, version_text, version), where)
