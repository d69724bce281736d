"""`ModelSpec`: the architecture numbers sizing needs, parsed from a config.json dict.

Pure: `model_spec_from_config` takes the parsed config (and, when known, the exact weight
bytes from the checkpoint's safetensors headers) and returns data. Reading files is
`model_source.py`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tritonops.errors import InputError
from tritonops.values.numbers import real_number, whole_number

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8": 1, "float8_e4m3fn": 1}

# model types vLLM refuses to run in float16 (_FLOAT16_NOT_SUPPORTED_MODELS, 0.10.2)
FLOAT16_NOT_SUPPORTED = frozenset({"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"})

# MLPs with two matrices (up, down) instead of three (gate, up, down)
_NON_GATED_MLP = frozenset({"opt", "phi", "gpt2", "gpt_neox", "gptj", "bloom", "falcon", "starcoder2",
                            "gpt_bigcode", "mpt"})

# the keys vLLM's _get_and_verify_max_len looks at, in its order
# the largest size read from config.json: far above any model's, small enough that the sizing
# arithmetic stays exact and quick (a bigger number is a broken or hostile file)
_MAX_SIZE = 2**40

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
    kv_window: int | None = None       # the window vLLM's KV spec carries (also when >= the context)
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


class ConfigError(InputError):
    """config.json lacks something sizing needs or holds something that is no size; the
    message names the key, `where` the file."""


def _int(config: dict, *keys: str, where: str, prefix: str = "", default: int | None = None,
         minimum: int = 1, maximum: int = _MAX_SIZE) -> int:
    """The first of `keys` present, as a whole number in [minimum, maximum] (JSON numbers only)."""
    for key in keys:
        value = config.get(key)
        if value is not None:
            return whole_number(value, prefix + key, where, minimum=minimum, maximum=maximum, strings=False)
    if default is None:
        raise ConfigError(f"missing '{prefix}{keys[0]}'", where)
    return default


def _text(config: dict, key: str, where: str, prefix: str = "") -> str | None:
    value = config.get(key)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{prefix}{key} must be a string, not {type(value).__name__}", where)
    return value


def derived_max_len(config: dict, where: str = "config.json", prefix: str = "") -> tuple[int, int]:
    """(vLLM's derived max model length, raw max_position_embeddings)."""
    found = [_int(config, key, where=where, prefix=prefix) for key in _MAX_LEN_KEYS
             if config.get(key) is not None]
    if not found:
        raise ConfigError(f"missing '{prefix}max_position_embeddings'", where)
    base = min(found)
    length = base
    rope = config.get("rope_scaling") or {}
    if isinstance(rope, dict):
        kind = rope.get("rope_type", rope.get("type", "default"))
        factor = rope.get("factor")
        # vLLM does not scale the limit for these types (their max_position_embeddings is final)
        if factor is not None and kind not in ("su", "longrope", "llama3", "default", "mrope", "dynamic"):
            factor = real_number(factor, f"{prefix}rope_scaling.factor", where, strings=False)
            original = _int(rope, "original_max_position_embeddings", where=where,
                            prefix=f"{prefix}rope_scaling.", default=base)
            length = whole_number(int(original * factor), f"max_model_len ({prefix}rope_scaling.factor "
                                  f"{factor:g} x {original})", where, maximum=_MAX_SIZE)
    return length, base


def _quantization(config: dict, where: str, prefix: str) -> Quantization | None:
    q = config.get("quantization_config")
    if not isinstance(q, dict):
        return None
    prefix = f"{prefix}quantization_config."
    method = (_text(q, "quant_method", where, prefix) or "").lower()
    if not method:
        return None
    bits = None if method == "fp8" else _int(q, "bits", "w_bit", where=where, prefix=prefix, default=0,
                                             maximum=64) or None
    group = q.get("group_size", q.get("q_group_size"))
    if group == -1 and not isinstance(group, bool):   # GPTQ's "no groups" (one scale per channel)
        group = None
    if group is not None:
        group = whole_number(group, f"{prefix}group_size", where, strings=False)
    return Quantization(method=method, bits=8 if method == "fp8" else bits, group_size=group)


def model_spec_from_config(config: dict, name: str, source: str = "", weight_bytes: int = 0,
                           param_count: int = 0, where: str = "config.json") -> ModelSpec:
    """Parse a Hugging Face config.json dict (`where` names it in errors). Multimodal configs keep
    the language model's numbers under `text_config`/`llm_config`; those are used, and the plan
    says it is rough. Every size must be a whole, positive JSON number: ConfigError/InputError
    naming the key otherwise (4096.0 is taken as 4096)."""
    if not isinstance(config, dict):
        raise ConfigError("config.json is not a JSON object", where)
    multimodal = False
    text, prefix = config, ""
    for key in ("text_config", "llm_config", "language_config"):
        if isinstance(config.get(key), dict) and "hidden_size" in config[key]:
            text, prefix = {**config[key]}, f"{key}."
            for inherit in ("torch_dtype", "quantization_config", "tie_word_embeddings"):
                text.setdefault(inherit, config.get(inherit))
            multimodal = True
    multimodal = multimodal or "vision_config" in config

    def size(*keys: str, **bounds) -> int:
        return _int(text, *keys, where=where, prefix=prefix, **bounds)

    model_type = _text(text, "model_type", where, prefix) or _text(config, "model_type", where) or "unknown"
    notes: list[str] = []
    hidden = size("hidden_size", "n_embd", "d_model")
    layers = size("num_hidden_layers", "n_layer", "num_layers")
    heads = size("num_attention_heads", "n_head", "num_heads")
    # vLLM's get_total_num_kv_heads order (reference 1.3)
    kv_heads = size("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num", default=heads)
    if text.get("multi_query"):
        kv_heads = 1
    if hidden < heads and text.get("head_dim") is None:
        raise ConfigError(f"{prefix}hidden_size {hidden} is smaller than {prefix}num_attention_heads {heads} "
                          "(head_dim would be 0)", where)
    head_dim = size("head_dim", default=hidden // heads)
    inter = size("intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size", default=4 * hidden)
    vocab = size("vocab_size", "padded_vocab_size")
    max_len, max_pos = derived_max_len(text, where, prefix)

    dtype = (_text(text, "torch_dtype", where, prefix) or _text(text, "dtype", where, prefix)
             or "float16").replace("torch.", "")
    if dtype not in DTYPE_BYTES:
        notes.append(f"checkpoint dtype {dtype[:40]!r} unknown; treated as float16")
        dtype = "float16"

    kv_lora_rank = size("kv_lora_rank", default=0, minimum=0)
    use_mla = kv_lora_rank > 0
    layer_types = text.get("layer_types") or []
    if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
        raise ConfigError(f"{prefix}layer_types must be a list of strings", where)
    hybrid = len(set(layer_types)) > 1 or model_type in (
        "gemma2", "gemma3", "gemma3_text", "cohere2", "gpt_oss", "qwen3_next", "jamba", "falcon_h1")
    sliding = text.get("sliding_window")
    # a number must be a size; anything else (a per-layer list, false) is not one window
    if isinstance(sliding, (int, float)) and not isinstance(sliding, bool):
        sliding = size("sliding_window")
    declared = sliding if isinstance(sliding, int) and not isinstance(sliding, bool) \
        and text.get("use_sliding_window") is not False else None
    if text.get("use_sliding_window") is False or not isinstance(sliding, int) or isinstance(sliding, bool) \
            or sliding >= max_len:
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

    experts = size("num_experts", "num_local_experts", "n_routed_experts", default=0, minimum=0)
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
        num_experts_per_tok=size("num_experts_per_tok", "moe_topk", default=0) if experts else 0,
        moe_intermediate_size=size("moe_intermediate_size", default=inter) if experts else 0,
        shared_expert_intermediate_size=size("shared_expert_intermediate_size", default=0, minimum=0),
        use_mla=use_mla,
        kv_lora_rank=kv_lora_rank,
        qk_rope_head_dim=size("qk_rope_head_dim", default=0, minimum=0),
        sliding_window=sliding,
        kv_window=declared,
        hybrid_attention=hybrid,
        multimodal=multimodal,
        quantization=_quantization(text, where, prefix),
        param_count=param_count,
        weight_bytes=weight_bytes,
        source=source,
        notes=tuple(notes),
    )
