"""Tiny models made in the lab: config.json, tokenizer files and two safetensors shards with their
index, deterministic (same bytes every time), valid for tritonops's own readers. `tiny_model()` is
about 3 MB; its parameters shape others (`LAB_MODELS`: what `tritonops lab up` writes)."""

from __future__ import annotations

import json
import random
import struct

TINY_REPO = "lab/tiny-llama"

# What `tritonops lab up` writes under <state dir>/models/<name>/: name -> tiny_model() arguments.
# tiny-llama for the full hosts; micro-llama (smaller, grouped KV heads, a shorter context) for a
# 2080 Ti profile host, so a deploy sizes a different model there.
LAB_MODELS: dict[str, dict] = {
    "tiny-llama": {},
    "micro-llama": {"seed": 1, "hidden": 256, "layers": 2, "heads": 4, "kv_heads": 2, "vocab": 512,
                    "max_positions": 1024},
}


def _safetensors(tensors: dict[str, tuple[list[int], bytes]]) -> bytes:
    header, offset, data = {}, 0, b""
    for name, (shape, raw) in tensors.items():
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to 8 bytes
    return struct.pack("<Q", len(text)) + text + data


def _tensor(rng: random.Random, *shape: int) -> tuple[list[int], bytes]:
    count = 1
    for n in shape:
        count *= n
    return list(shape), struct.pack(f"<{count}f", *(rng.uniform(-0.1, 0.1) for _ in range(count)))


def tiny_model(seed: int = 0, *, hidden: int = 384, layers: int = 1, heads: int = 6, kv_heads: int | None = None,
               vocab: int = 1024, max_positions: int = 2048) -> dict[str, bytes]:
    """File name -> bytes of a tiny Llama-shaped model (the defaults: the 3 MB `lab/tiny-llama`).
    The shards hold the embeddings, the final norm and lm_head; `layers` only shapes config.json."""
    rng = random.Random(seed)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
              "intermediate_size": 4 * hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": heads if kv_heads is None else kv_heads, "vocab_size": vocab,
              "max_position_embeddings": max_positions,
              "torch_dtype": "float32", "rms_norm_eps": 1e-6, "tie_word_embeddings": False}
    shard1 = _safetensors({"model.embed_tokens.weight": _tensor(rng, vocab, hidden),
                           "model.norm.weight": _tensor(rng, hidden)})
    shard2 = _safetensors({"lm_head.weight": _tensor(rng, vocab, hidden)})
    names = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    index = {"metadata": {"total_size": (vocab * hidden * 2 + hidden) * 4},
             "weight_map": {"model.embed_tokens.weight": names[0], "model.norm.weight": names[0],
                            "lm_head.weight": names[1]}}
    tokens = {f"t{i}": i for i in range(vocab)}
    return {
        "config.json": json.dumps(config, indent=2).encode(),
        "generation_config.json": json.dumps({"bos_token_id": 1, "eos_token_id": 2}).encode(),
        # a whole tokenizers file (what transformers' AutoTokenizer loads, as aiperf does to count tokens): words
        # split on whitespace, each a token, as the stand-in engine counts them
        "tokenizer.json": json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                                      "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
                                      "post_processor": None, "decoder": None,
                                      "model": {"type": "WordLevel", "vocab": tokens, "unk_token": "t0"}}).encode(),
        "tokenizer_config.json": json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}).encode(),
        "model.safetensors.index.json": json.dumps(index, indent=2).encode(),
        names[0]: shard1,
        names[1]: shard2,
    }
