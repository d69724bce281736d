"""What sizing returns: `SizingRequest` in, `EnginePlan` out (with `Alternative`s when it
does not fit). Plain frozen data; `to_dict()` is the `--json` form."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tritonops.sizing.versions import DEFAULT_VLLM_VERSION


@dataclass(frozen=True)
class SizingRequest:
    """What the user asked for. None = choose (or use vLLM's default, and say so)."""

    model_ref: str = ""                       # the "model" value written to model.json
    vllm_version: str = DEFAULT_VLLM_VERSION
    tensor_parallel_size: int | None = None   # given: checked, not chosen
    pipeline_parallel_size: int | None = None # hosts, one pipeline stage each (a Ray cluster); None: one host
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None          # given: checked, not chosen
    max_context: int | None = None            # cap for the chosen max_model_len
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    enforce_eager: bool | None = None
    prefer: str = "fewest-gpus"               # or "latency": the largest TP that fits
    concurrency: int = 1                      # full-length requests the KV cache must hold at once
    host_ram_bytes: int | None = None         # sizes swap_space where the version takes it
    swap_space_gib: float | None = None       # CPU KV cache per GPU the user asks for (0: none); None:
                                              # vLLM's default where it has swap_space, else none


@dataclass(frozen=True)
class Alternative:
    """One way to make it fit. `available` is False for what tritonops cannot do yet."""

    kind: str            # tensor_parallel | quantized | kv_cache_dtype | shorter_context |
                         # gpu_memory_utilization | pipeline_parallel
    summary: str
    tensor_parallel_size: int | None = None
    max_model_len: int | None = None
    gpus_needed: int | None = None
    available: bool = True
    pipeline_parallel_size: int | None = None   # hosts of a Ray cluster


@dataclass(frozen=True)
class MemoryBreakdown:
    """Per GPU, bytes."""

    cuda_total: int
    budget: int
    weights: int
    activation: int
    non_torch: int
    other_processes: int
    cudagraph: int
    safety_margin: int
    kv_cache: int


@dataclass(frozen=True)
class Reason:
    """Why one engine field has its value. `plan` shows `why` beside the field; the plan's JSON
    says the whole as one line: "max_model_len 32768: the model's maximum; ..."."""

    field: str
    value: str | None = None   # as written in model.json ("true", "0.92"); None: about the field, not a value
    why: str = ""

    def __str__(self) -> str:
        head = self.field if self.value is None else f"{self.field} {self.value}"
        return f"{head}: {self.why}" if self.why else head


@dataclass(frozen=True)
class EnginePlan:
    fits: bool
    model: str
    vllm_version: str
    engine: str
    gpu_name: str
    gpu_count: int
    compute_capability: str
    tensor_parallel_size: int
    max_model_len: int
    dtype: str
    kv_cache_dtype: str
    gpu_memory_utilization: float
    enforce_eager: bool
    max_num_seqs: int
    max_num_batched_tokens: int
    swap_space: float | None
    kv_cache_tokens: int
    kv_cache_bytes_per_gpu: int
    weights_bytes_per_gpu: int
    kv_bytes_per_token: int
    memory: MemoryBreakdown
    reasons: tuple[Reason, ...]
    assumed: tuple[str, ...]
    problems: tuple[str, ...]
    alternatives: tuple[Alternative, ...]
    notes: tuple[str, ...]
    rough: bool
    model_json: dict = field(default_factory=dict)
    kv_offloading_size: float | None = None   # GiB over all TP ranks (CPU KV-cache offloading, 0.12+)
    cpu_kv_cache_bytes: int = 0               # host RAM this engine takes for KV cache (swap or offload)
    vllm_auto_max_model_len: int | None = None  # vLLM's own auto-fit length (max_model_len auto), where it has one
    pipeline_parallel_size: int = 1           # hosts, one stage each; gpu_count and the per-GPU figures are per host
    layer_split: tuple[int, ...] = ()         # decoder layers per stage (pipeline parallel only)
    kv_stage: int = 0                         # the stage with the fewest KV blocks, whose figures these are

    @property
    def hosts(self) -> int:
        return self.pipeline_parallel_size

    def to_dict(self) -> dict:
        data = asdict(self)
        for key in ("assumed", "problems", "notes", "layer_split"):
            data[key] = list(data[key])
        data["reasons"] = [str(reason) for reason in self.reasons]
        data["alternatives"] = [asdict(a) for a in self.alternatives]
        return data
