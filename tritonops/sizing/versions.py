"""What differs between vLLM versions, as data: one `VllmProfile` per version.

Every rule here is read from vLLM's source in the reference
(`reference/vllm-memory.md`, sections 1.1-1.11); where a version between two
read versions is unknown, the rule that predicts *less* KV cache is taken.

Versions are PEP 440 versions (`packaging.version.Version`) and compare in its order:
0.9.0rc1 < 0.9.0 < 0.9.0.post1 < 0.9.1.dev0 < 0.9.1 < 0.10.0; a local label
(`+1958ee56.nv25.6`, NVIDIA's builds) sorts just after its public version. Every rule
names the first *release* it holds for, so a pre-release or dev build of X (0.9.0rc1,
0.9.1.dev0) takes the rules of the versions below X, unless a table names the pre-release
itself: it was cut before X was and is not what X's source was read from. A post release
or a fourth number (0.6.3.post1, 0.9.0.1) takes X's rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from tritonops.errors import InputError
from tritonops.sizing.default_version import DEFAULT_VLLM_VERSION  # noqa: F401  (re-exported)
from tritonops.sizing.engine_arg_keys import accepts as _accepts, refused_keys


OLDEST_SUPPORTED = Version("0.4.0")  # 24.04's image, the oldest vllm-python-py3 in the compat table


def parse_version(text: str) -> Version:
    """'0.6.3.post1', 'v0.10.2', '0.9.0rc1+1958ee56.nv25.6.cu129' -> their PEP 440 Version; anything
    else (or a bare major, '1') -> InputError naming the value."""
    try:
        version = Version(str(text))
    except InvalidVersion:
        version = None
    if version is None or len(version.release) < 2:
        raise InputError(f"'{text}' is not a vLLM version (expected e.g. 0.10.2)", "--vllm-version")
    return version


def _in_series(version: Version, series: str) -> bool:
    """`version` is a release of `series` ('0.25': 0.25.0 up to, not including, 0.26.0)."""
    major, minor = (int(part) for part in series.split("."))
    return Version(f"{major}.{minor}.0") <= version < Version(f"{major}.{minor + 1}.0")


# quantization method -> list of (first version, minimum compute capability) (reference 1.10);
# a method absent below its first entry does not exist in that version.
_QUANT_MIN_CC: dict[str, tuple[tuple[Version, tuple[int, int]], ...]] = {
    "gptq": ((Version("0.4.0"), (6, 0)),),
    "gptq_marlin": ((Version("0.4.0"), (8, 0)),),
    "marlin": ((Version("0.4.0"), (8, 0)),),
    "awq": ((Version("0.4.0"), (7, 5)),),
    "awq_marlin": ((Version("0.6.0"), (8, 0)),),
    # 8.9 in 0.4.2, 8.0 from 0.6 (weight-only Marlin below 8.9), 7.5 in 0.33; unknown between
    # 0.22 and 0.33 -> the stricter 8.0.
    "fp8": ((Version("0.4.0"), (8, 9)), (Version("0.6.0"), (8, 0)), (Version("0.33.0"), (7, 5))),
    "fbgemm_fp8": ((Version("0.6.0"), (8, 0)),),
    "experts_int8": ((Version("0.6.0"), (8, 0)),),
    "mxfp4": ((Version("0.10.0"), (8, 0)),),
    "modelopt": ((Version("0.6.0"), (8, 9)), (Version("0.33.0"), (8, 0))),
    "compressed-tensors": ((Version("0.6.0"), (7, 0)),),
    "bitsandbytes": ((Version("0.6.0"), (7, 0)),),
    "gguf": ((Version("0.6.0"), (6, 0)),),
    "aqlm": ((Version("0.4.0"), (7, 0)), (Version("0.6.0"), (6, 0))),
}

@dataclass(frozen=True)
class VllmProfile:
    """How one vLLM version, on one kind of GPU, turns memory into KV-cache blocks."""

    version: str
    parsed_version: Version           # `version` parsed (PEP 440 order)
    engine: str                       # "V0" or "V1" (V1 falls back to V0 below CC 8.0 up to 0.10)
    memory_formula: str               # see MEMORY_FORMULAS
    default_gpu_memory_utilization: float
    accepts_swap_space: bool
    kv_offloading: bool               # kv_offloading_size / kv_offloading_backend (0.12+, engine_arg_keys)
    auto_max_model_len: bool          # accepts max_model_len -1 / "auto" (0.14+)
    subtracts_cudagraph_memory: bool  # graphs profiled and taken out of the KV budget (0.20+)
    reserves_null_block: bool         # one block held back before the length check (after 0.22)
    checks_free_memory_at_start: bool  # refuses to start when free < util x total (V1 0.9.1+)
    subtracts_other_processes: bool   # other processes' memory counted as non-torch memory
    auto_chunked_prefill_above: int | None  # V0: chunked prefill switched on above this length
    chunked_prefill_batched_tokens: int     # V0 max_num_batched_tokens once chunked prefill is on
    big_gpu_excludes_a100: bool       # V1 defaults: the >= 70 GiB rule skips A100 (0.9+)
    min_compute_capability: tuple[int, int]
    measured_memory: bool = False     # the memory terms were measured on this version (0.25.x, H200)
    block_size: int = 16
    kv_tokens_log_line: str = "GPU KV cache size"

    # -- derived rules -------------------------------------------------------------------
    def default_max_num_seqs(self, cuda_total_bytes: int, gpu_name: str) -> int:
        if self.engine == "V1" and self._is_big_gpu(cuda_total_bytes, gpu_name):
            return 1024
        return 256

    def default_max_num_batched_tokens(self, cuda_total_bytes: int, gpu_name: str,
                                       max_model_len: int) -> int:
        """What vLLM profiles with when the user leaves max_num_batched_tokens out.

        V1: the `vllm serve` defaults (Triton's backend builds its engine through the OpenAI
        server's client builder, so it gets the server context; tritonops also writes the
        value into model.json so the prediction does not hang on that). V0: max(len, 2048),
        or the chunked-prefill size when the version switches chunked prefill on."""
        if self.engine == "V1":
            return 8192 if self._is_big_gpu(cuda_total_bytes, gpu_name) else 2048
        if self.auto_chunked_prefill_above is not None and max_model_len > self.auto_chunked_prefill_above:
            return self.chunked_prefill_batched_tokens
        return max(max_model_len, 2048)

    def chunked_prefill(self, max_model_len: int) -> bool:
        if self.engine == "V1":
            return True
        return self.auto_chunked_prefill_above is not None and max_model_len > self.auto_chunked_prefill_above

    def _is_big_gpu(self, cuda_total_bytes: int, gpu_name: str) -> bool:
        if cuda_total_bytes < 70 * 1024 ** 3:
            return False
        return not (self.big_gpu_excludes_a100 and "a100" in gpu_name.lower())

    def accepts_key(self, key: str) -> bool:
        """This version's AsyncEngineArgs takes `key` (engine_arg_keys.py says which and why)."""
        return _accepts(key, self.parsed_version)

    def quantization_min_cc(self, method: str) -> tuple[int, int] | None:
        """Minimum compute capability for a quantization method in this version; None when
        this version has no such method."""
        steps = _QUANT_MIN_CC.get(method)
        if not steps:
            return None
        found = None
        for first, cc in steps:
            if self.parsed_version >= first:
                found = cc
        return found

    def max_tokens_accepted(self, num_blocks: int) -> int:
        """The longest max_model_len the startup check accepts with this many blocks."""
        usable = num_blocks - (1 if self.reserves_null_block else 0)
        return max(usable, 0) * self.block_size


MEMORY_FORMULAS = {
    "v0_peak_growth": "total x util - (free at init - free after profiling)  [V0, <= 0.6.3]",
    "v0_torch_peak": "total x util - (torch peak + non-torch incl. other processes)  [0.6.4]",
    "v0_profiled_increase": "total x util - (weights + activation increase + non-torch increase)  [V0 0.6.5+]",
    "v1_torch_peak": "total x util - (torch peak + non-torch incl. other processes)  [V1 0.8.0-0.9.0]",
    "v1_requested_minus_increase": "total x util - (weights + activation increase + non-torch increase)"
                                   "; refuses to start if free < total x util  [V1 0.9.1+]",
}


def profile_for(version: str, compute_capability: tuple[int, int] = (9, 0)) -> VllmProfile:
    v = parse_version(version)
    if v < OLDEST_SUPPORTED:
        raise InputError(f"vLLM {version} is older than the oldest version tritonops models (0.4.0)",
                         "--vllm-version")
    v1 = v >= Version("0.8.0") and not (compute_capability < (8, 0) and v < Version("0.11.0"))
    if not v1:
        if v < Version("0.6.4"):
            formula = "v0_peak_growth"
        elif v < Version("0.6.5"):
            formula = "v0_torch_peak"
        else:
            formula = "v0_profiled_increase"
    elif v < Version("0.9.1"):
        formula = "v1_torch_peak"
    else:
        formula = "v1_requested_minus_increase"
    return VllmProfile(
        version=version,
        parsed_version=v,
        engine="V1" if v1 else "V0",
        memory_formula=formula,
        # 0.90 read up to 0.18.0, 0.92 read in 0.20.2+; tritonops always writes the value
        default_gpu_memory_utilization=0.92 if v >= Version("0.20.0") else 0.90,
        accepts_swap_space=_accepts("swap_space", v),
        kv_offloading=_accepts("kv_offloading_size", v),
        auto_max_model_len=v >= Version("0.14.0"),
        # env default 1 read in 0.20.2 (log says "default since v0.21.0"): 0.20.x assumed on
        subtracts_cudagraph_memory=v >= Version("0.20.0"),
        # read in 0.25.0: the start-up check compares bytes (cdiv(len, block) blocks), and
        # "GPU KV cache size" counts every block; 0.23-0.24 and newer than 0.25 unread -> reserved
        reserves_null_block=v >= Version("0.23.0") and not _in_series(v, "0.25"),
        checks_free_memory_at_start=v1 and v >= Version("0.9.1"),
        subtracts_other_processes=formula in ("v0_torch_peak", "v1_torch_peak"),
        # present in 0.6.3.post1 and 0.6.4, absent in 0.4.2; 0.5.x unread -> assumed absent
        auto_chunked_prefill_above=32768 if (not v1 and v >= Version("0.6.0")) else None,
        chunked_prefill_batched_tokens=512 if v < Version("0.7.0") else 2048,
        big_gpu_excludes_a100=v >= Version("0.9.0"),
        # NGC vllm images from 25.01 (vLLM 0.6.3.post1 on) need compute capability 7.5+
        min_compute_capability=(7, 5) if v >= Version("0.6.3") else (7, 0),
        kv_tokens_log_line="GPU KV cache size" if v1 else "# GPU blocks (x 16 tokens)",
        measured_memory=v1 and _in_series(v, "0.25"),
    )


def unknown_model_json_keys(keys, profile: VllmProfile) -> list[str]:
    """Keys this version's AsyncEngineArgs would refuse (or that tritonops does not know)."""
    return refused_keys(keys, profile.parsed_version)
