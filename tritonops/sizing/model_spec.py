"""`ModelSpec`: the architecture numbers sizing needs, parsed from a config.json dict.

Pure: `model_spec_from_config` takes the parsed config (and, when known, the exact weight
bytes from the checkpoint's safetensors headers) and returns data. Reading files is
`model_source.py`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8": 1, "float8_e4m3fn": 1}

# model types vLLM refuses to run in float16 (_FLOAT16_NOT_SUPPORTED_MODELS, 0.10.2)
FLOAT16_NOT_SUPPORTED = frozenset({"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"})

# MLPs with two matrices (up, down) instead of three (gate, up, down)
_NON_GATED_MLP = frozenset({"opt", "phi", "gpt2", "gpt_neox", "gptj", "bloom", "falcon", "starcoder2",
                            "gpt_bigcode", "mpt"})

# the keys vLLM's _get_and_verify_max_len looks at, in its order
_MAX_LEN_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                 "model_max_length", "max_sequence_length", "max_seq_length", "seq_len")


@dataclass(frozen=True)
class Quantization:
    method: str               # as in quantization_config.quant_method: awq, gptq, fp8, ...
    bits: int | None = None
    group_size: int | None = None


@dataclass(frozen=True)
class ModelSpec:
    name: str
    model_type: str
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_model_len: int                 # the model's own limit, as vLLM derives it
    max_position_embeddings: int
    torch_dtype: str                   # checkpoint dtype: bfloat16, float16, float32
    tie_word_embeddings: bool = False
    gated_mlp: bool = True
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    use_mla: bool = False
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    sliding_window: int | None = None
    hybrid_attention: bool = False     # mixes full and sliding/linear attention layers
    multimodal: bool = False
    quantization: Quantization | None = None
    param_count: int = 0               # 0: not known, estimate from the architecture
    weight_bytes: int = 0              # exact bytes in the checkpoint files; 0: not known
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def rough(self) -> bool:
        """The KV arithmetic is only approximate for this model (said in the plan)."""
        return self.hybrid_attention or self.multimodal or self.sliding_window is not None or self.use_mla

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    def estimated_param_count(self) -> int:
        """Parameters from the architecture (embeddings, attention, MLP/experts, norms)."""
        h, v, layers = self.hidden_size, self.vocab_size, self.num_hidden_layers
        q = self.num_attention_heads * self.head_dim
        kv = self.num_key_value_heads * self.head_dim
        attn = h * q + 2 * h * kv + q * h
        mats = 3 if self.gated_mlp else 2
        if self.is_moe:
            mlp = self.num_experts * mats * h * self.moe_intermediate_size + h * self.num_experts
            mlp += mats * h * self.shared_expert_intermediate_size
        else:
            mlp = mats * h * self.intermediate_size
        embeddings = v * h * (1 if self.tie_word_embeddings else 2)
        return embeddings + layers * (attn + mlp + 2 * h) + h

    @property
    def parameters(self) -> int:
        return self.param_count or self.estimated_param_count()


class ConfigError(ValueError):
    """config.json lacks something sizing needs; the message names the key."""


def _int(config: dict, *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = config.get(key)
        if value is not None:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ConfigError(f"'{key}' must be a number, got {value!r}")
            return int(value)
    if default is None:
        raise ConfigError(f"missing '{keys[0]}'")
    return default


def derived_max_len(config: dict) -> tuple[int, int]:
    """(vLLM's derived max model length, raw max_position_embeddings)."""
    found = [int(config[k]) for k in _MAX_LEN_KEYS if isinstance(config.get(k), (int, float))]
    if not found:
        raise ConfigError("missing 'max_position_embeddings'")
    base = min(found)
    length = base
    rope = config.get("rope_scaling") or {}
    if isinstance(rope, dict):
        kind = rope.get("rope_type", rope.get("type", "default"))
        factor = rope.get("factor")
        # vLLM does not scale the limit for these types (their max_position_embeddings is final)
        if factor and kind not in ("su", "longrope", "llama3", "default", "mrope", "dynamic"):
            if "original_max_position_embeddings" in rope:
                length = int(rope["original_max_position_embeddings"] * factor)
            else:
                length = int(base * factor)
    return length, base


def _quantization(config: dict) -> Quantization | None:
    q = config.get("quantization_config")
    if not isinstance(q, dict):
        return None
    method = str(q.get("quant_method", "")).lower()
    if not method:
        return None
    bits = q.get("bits", q.get("w_bit"))
    group = q.get("group_size", q.get("q_group_size"))
    if method == "fp8":
        bits = 8
    return Quantization(method=method, bits=int(bits) if bits else None,
                        group_size=int(group) if isinstance(group, int) else None)


def model_spec_from_config(config: dict, name: str, source: str = "", weight_bytes: int = 0,
                           param_count: int = 0) -> ModelSpec:
    """Parse a Hugging Face config.json dict. Multimodal configs keep the language model's
    numbers under `text_config`/`llm_config`; those are used, and the plan says it is rough."""
    if not isinstance(config, dict):
        raise ConfigError("config.json is not a JSON object")
    multimodal = False
    text = config
    for key in ("text_config", "llm_config", "language_config"):
        if isinstance(config.get(key), dict) and "hidden_size" in config[key]:
            text = {**config[key]}
            for inherit in ("torch_dtype", "quantization_config", "tie_word_embeddings"):
                text.setdefault(inherit, config.get(inherit))
            multimodal = True
    multimodal = multimodal or "vision_config" in config

    model_type = str(text.get("model_type") or config.get("model_type") or "unknown")
    notes: list[str] = []
    hidden = _int(text, "hidden_size", "n_embd", "d_model")
    layers = _int(text, "num_hidden_layers", "n_layer", "num_layers")
    heads = _int(text, "num_attention_heads", "n_head", "num_heads")
    # vLLM's get_total_num_kv_heads order (reference 1.3)
    kv_heads = _int(text, "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
                    default=heads)
    if text.get("multi_query"):
        kv_heads = 1
    if heads <= 0 or layers <= 0 or hidden <= 0 or kv_heads <= 0:
        raise ConfigError("hidden_size, num_hidden_layers and the head counts must be positive")
    head_dim = _int(text, "head_dim", default=hidden // heads)
    inter = _int(text, "intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size", default=4 * hidden)
    vocab = _int(text, "vocab_size", "padded_vocab_size")
    max_len, max_pos = derived_max_len(text)

    dtype = str(text.get("torch_dtype") or text.get("dtype") or "float16").replace("torch.", "")
    if dtype not in DTYPE_BYTES:
        notes.append(f"checkpoint dtype '{dtype}' unknown; treated as float16")
        dtype = "float16"

    use_mla = bool(text.get("kv_lora_rank"))
    sliding = text.get("sliding_window")
    layer_types = text.get("layer_types") or []
    hybrid = bool(layer_types and len(set(layer_types)) > 1) or model_type in (
        "gemma2", "gemma3", "gemma3_text", "cohere2", "gpt_oss", "qwen3_next", "jamba", "falcon_h1")
    if text.get("use_sliding_window") is False or not isinstance(sliding, int) or sliding >= max_len:
        sliding = None
    if hybrid:
        notes.append("mixes sliding-window (or linear) and full attention: vLLM's hybrid allocator "
                     "reports KV tokens differently; the estimate is rough (treated as full attention, "
                     "which under-estimates)")
    elif sliding:
        notes.append(f"sliding-window attention ({sliding}): treated as full attention, which "
                     "under-estimates the context vLLM accepts")
    if use_mla:
        notes.append("multi-head latent attention: KV per token from kv_lora_rank; rough")
    if multimodal:
        notes.append("multimodal: the vision encoder's profiling peak is not modelled; rough")

    experts = _int(text, "num_experts", "num_local_experts", "n_routed_experts", default=0)
    return ModelSpec(
        name=name,
        model_type=model_type,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=1 if use_mla else kv_heads,
        head_dim=head_dim,
        intermediate_size=inter,
        vocab_size=vocab,
        max_model_len=max_len,
        max_position_embeddings=max_pos,
        torch_dtype=dtype,
        tie_word_embeddings=bool(text.get("tie_word_embeddings", False)),
        gated_mlp=model_type not in _NON_GATED_MLP,
        num_experts=experts,
        num_experts_per_tok=_int(text, "num_experts_per_tok", "moe_topk", default=0) if experts else 0,
        moe_intermediate_size=_int(text, "moe_intermediate_size", default=inter) if experts else 0,
        shared_expert_intermediate_size=_int(text, "shared_expert_intermediate_size", default=0),
        use_mla=use_mla,
        kv_lora_rank=_int(text, "kv_lora_rank", default=0),
        qk_rope_head_dim=_int(text, "qk_rope_head_dim", default=0),
        sliding_window=sliding,
        hybrid_attention=hybrid,
        multimodal=multimodal,
        quantization=_quantization(text),
        param_count=param_count,
        weight_bytes=weight_bytes,
        source=source,
        notes=tuple(notes),
    )
