"""Architecture numbers of common models, for planning without the weights or a network.

Each entry is the subset of the model's public config.json that sizing reads, plus the
parameter count the model card states (weights = parameters x dtype bytes). A model
directory, when given, always wins over this table.
"""

from __future__ import annotations

from tritonops.sizing.model_spec import ModelSpec, model_spec_from_config


def _cfg(model_type, hidden, layers, heads, kv, inter, vocab, max_pos, params, dtype="bfloat16",
         tie=False, **extra):
    config = dict(model_type=model_type, hidden_size=hidden, num_hidden_layers=layers,
                  num_attention_heads=heads, num_key_value_heads=kv, intermediate_size=inter,
                  vocab_size=vocab, max_position_embeddings=max_pos, torch_dtype=dtype,
                  tie_word_embeddings=tie, **extra)
    return config, params


_LLAMA31_ROPE = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192,
                 "low_freq_factor": 1.0, "high_freq_factor": 4.0}
_LLAMA32_ROPE = {**_LLAMA31_ROPE, "factor": 32.0}

MODEL_CATALOG: dict[str, tuple[dict, int]] = {
    # Qwen1.5 (MHA)
    "Qwen/Qwen1.5-0.5B-Chat": _cfg("qwen2", 1024, 24, 16, 16, 2816, 151936, 32768, 463_987_712, tie=True),
    "Qwen/Qwen1.5-1.8B-Chat": _cfg("qwen2", 2048, 24, 16, 16, 5504, 151936, 32768, 1_836_828_672),
    "Qwen/Qwen1.5-7B-Chat": _cfg("qwen2", 4096, 32, 32, 32, 11008, 151936, 32768, 7_721_324_544),
    "Qwen/Qwen1.5-14B-Chat": _cfg("qwen2", 5120, 40, 40, 40, 13696, 152064, 32768, 14_167_290_880),
    # Qwen2 / Qwen2.5 (GQA)
    "Qwen/Qwen2-1.5B-Instruct": _cfg("qwen2", 1536, 28, 12, 2, 8960, 151936, 32768, 1_543_714_304, tie=True),
    "Qwen/Qwen2-7B-Instruct": _cfg("qwen2", 3584, 28, 28, 4, 18944, 152064, 32768, 7_615_616_512),
    "Qwen/Qwen2.5-0.5B-Instruct": _cfg("qwen2", 896, 24, 14, 2, 4864, 151936, 32768, 494_032_768, tie=True),
    "Qwen/Qwen2.5-1.5B-Instruct": _cfg("qwen2", 1536, 28, 12, 2, 8960, 151936, 32768, 1_543_714_304, tie=True),
    "Qwen/Qwen2.5-3B-Instruct": _cfg("qwen2", 2048, 36, 16, 2, 11008, 151936, 32768, 3_085_938_688, tie=True),
    "Qwen/Qwen2.5-7B-Instruct": _cfg("qwen2", 3584, 28, 28, 4, 18944, 152064, 32768, 7_615_616_512),
    "Qwen/Qwen2.5-14B-Instruct": _cfg("qwen2", 5120, 48, 40, 8, 13824, 152064, 32768, 14_770_033_664),
    "Qwen/Qwen2.5-32B-Instruct": _cfg("qwen2", 5120, 64, 40, 8, 27648, 152064, 32768, 32_763_876_352),
    "Qwen/Qwen2.5-72B-Instruct": _cfg("qwen2", 8192, 80, 64, 8, 29568, 152064, 32768, 72_706_203_648),
    # Qwen3 (explicit head_dim 128; the 0.6B checkpoint stores its tied lm_head too: 751M tensors)
    "Qwen/Qwen3-0.6B": _cfg("qwen3", 1024, 28, 16, 8, 3072, 151936, 40960, 751_632_384, tie=True, head_dim=128),
    "Qwen/Qwen3-4B": _cfg("qwen3", 2560, 36, 32, 8, 9728, 151936, 40960, 4_022_468_096, tie=True, head_dim=128),
    "Qwen/Qwen3-8B": _cfg("qwen3", 4096, 36, 32, 8, 12288, 151936, 40960, 8_190_735_360, head_dim=128),
    "Qwen/Qwen3-14B": _cfg("qwen3", 5120, 40, 40, 8, 17408, 151936, 40960, 14_768_307_200, head_dim=128),
    "Qwen/Qwen3-32B": _cfg("qwen3", 5120, 64, 64, 8, 25600, 151936, 40960, 32_762_123_264, head_dim=128),
    "Qwen/Qwen3-30B-A3B": _cfg("qwen3_moe", 2048, 48, 32, 4, 6144, 151936, 40960, 30_532_122_624,
                               head_dim=128, num_experts=128, num_experts_per_tok=8,
                               moe_intermediate_size=768),
    "Qwen/Qwen3-235B-A22B": _cfg("qwen3_moe", 4096, 94, 64, 4, 12288, 151936, 40960, 235_093_634_560,
                                 head_dim=128, num_experts=128, num_experts_per_tok=8,
                                 moe_intermediate_size=1536),
    "Qwen/Qwen3-235B-A22B-FP8": _cfg("qwen3_moe", 4096, 94, 64, 4, 12288, 151936, 40960, 235_093_634_560,
                                     head_dim=128, num_experts=128, num_experts_per_tok=8,
                                     moe_intermediate_size=1536,
                                     quantization_config={"quant_method": "fp8",
                                                          "weight_block_size": [128, 128]}),
    # Llama 2 (fp16 checkpoints)
    "meta-llama/Llama-2-7b-chat-hf": _cfg("llama", 4096, 32, 32, 32, 11008, 32000, 4096, 6_738_415_616,
                                          dtype="float16"),
    "meta-llama/Llama-2-13b-chat-hf": _cfg("llama", 5120, 40, 40, 40, 13824, 32000, 4096, 13_015_864_320,
                                           dtype="float16"),
    "meta-llama/Llama-2-70b-chat-hf": _cfg("llama", 8192, 80, 64, 8, 28672, 32000, 4096, 68_976_648_192,
                                           dtype="float16"),
    # Llama 3 / 3.1 / 3.2 / 3.3
    "meta-llama/Meta-Llama-3-8B-Instruct": _cfg("llama", 4096, 32, 32, 8, 14336, 128256, 8192, 8_030_261_248),
    "meta-llama/Meta-Llama-3-70B-Instruct": _cfg("llama", 8192, 80, 64, 8, 28672, 128256, 8192,
                                                 70_553_706_496),
    "meta-llama/Llama-3.1-8B-Instruct": _cfg("llama", 4096, 32, 32, 8, 14336, 128256, 131072, 8_030_261_248,
                                             rope_scaling=_LLAMA31_ROPE),
    "meta-llama/Llama-3.1-70B-Instruct": _cfg("llama", 8192, 80, 64, 8, 28672, 128256, 131072,
                                              70_553_706_496, rope_scaling=_LLAMA31_ROPE),
    "meta-llama/Llama-3.2-1B-Instruct": _cfg("llama", 2048, 16, 32, 8, 8192, 128256, 131072, 1_235_814_400,
                                             tie=True, head_dim=64, rope_scaling=_LLAMA32_ROPE),
    "meta-llama/Llama-3.2-3B-Instruct": _cfg("llama", 3072, 28, 24, 8, 8192, 128256, 131072, 3_212_749_824,
                                             tie=True, head_dim=128, rope_scaling=_LLAMA32_ROPE),
    "meta-llama/Llama-3.3-70B-Instruct": _cfg("llama", 8192, 80, 64, 8, 28672, 128256, 131072,
                                              70_553_706_496, rope_scaling=_LLAMA31_ROPE),
    # Mistral
    "mistralai/Mistral-7B-Instruct-v0.1": _cfg("mistral", 4096, 32, 32, 8, 14336, 32000, 32768, 7_241_732_096,
                                               sliding_window=4096),
    "mistralai/Mistral-7B-Instruct-v0.2": _cfg("mistral", 4096, 32, 32, 8, 14336, 32000, 32768, 7_241_732_096),
    "mistralai/Mistral-7B-Instruct-v0.3": _cfg("mistral", 4096, 32, 32, 8, 14336, 32768, 32768, 7_248_023_552),
    "mistralai/Mistral-Nemo-Instruct-2407": _cfg("mistral", 5120, 40, 32, 8, 14336, 131072, 1024000,
                                                 12_247_782_400, head_dim=128),
    "mistralai/Mixtral-8x7B-Instruct-v0.1": _cfg("mixtral", 4096, 32, 32, 8, 14336, 32000, 32768,
                                                 46_702_792_704, num_local_experts=8, num_experts_per_tok=2),
    # others seen in the reference observations
    "codellama/CodeLlama-13b-Instruct-hf": _cfg("llama", 5120, 40, 40, 40, 13824, 32016, 16384,
                                                13_016_028_160),
    "facebook/opt-125m": _cfg("opt", 768, 12, 12, 12, 3072, 50272, 2048, 125_239_296, dtype="float16",
                              tie=True),
    "microsoft/phi-2": _cfg("phi", 2560, 32, 32, 32, 10240, 51200, 2048, 2_779_683_840, dtype="float16"),
    "google/gemma-2-9b-it": _cfg("gemma2", 3584, 42, 16, 8, 14336, 256000, 8192, 9_241_705_984,
                                 tie=True, head_dim=256, sliding_window=4096),
}


def catalog_ids() -> list[str]:
    return sorted(MODEL_CATALOG)


def find_catalog_model(model_id: str) -> ModelSpec | None:
    """A catalog entry by Hugging Face id, case-insensitive; None when absent."""
    wanted = model_id.strip().lower()
    for key, (config, params) in MODEL_CATALOG.items():
        if key.lower() == wanted or key.split("/", 1)[1].lower() == wanted:
            return model_spec_from_config(config, name=key, source="built-in catalog",
                                          param_count=params, where=f"built-in catalog {key}")
    return None
