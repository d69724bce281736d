"""A tiny model made in the lab: config.json, tokenizer files and two safetensors shards with their
index (about 3 MB), deterministic (same bytes every time), valid for tritonops's own readers."""

from __future__ import annotations

import json
import random
import struct

TINY_REPO = "lab/tiny-llama"


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


def tiny_model(seed: int = 0) -> dict[str, bytes]:
    """File name -> bytes of the tiny model."""
    rng = random.Random(seed)
    vocab, hidden = 1024, 384
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
              "intermediate_size": 4 * hidden, "num_hidden_layers": 1, "num_attention_heads": 6,
              "num_key_value_heads": 6, "vocab_size": vocab, "max_position_embeddings": 2048,
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
        "tokenizer.json": json.dumps({"version": "1.0", "model": {"type": "WordLevel", "vocab": tokens,
                                                                   "unk_token": "t0"}}).encode(),
        "tokenizer_config.json": json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}).encode(),
        "model.safetensors.index.json": json.dumps(index, indent=2).encode(),
        names[0]: shard1,
        names[1]: shard2,
    }
