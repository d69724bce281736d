"""Fuzzing the model files sizing reads: config.json (as a dict and as bytes), safetensors
headers (as generated JSON headers and as raw bytes) and the sizing of whatever is accepted.

Every input either loads or raises our typed error (InputError; ConfigError is one), never
another exception, a hang or unbounded memory; and what loads is made of sizes (positive whole
numbers), so no plan "fits" on nonsense. Each test counts the examples it tried; the last test
prints the totals (and checks each fuzzer ran the number it was given).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import tempfile
from collections import Counter
from dataclasses import fields
from pathlib import Path

import pytest
from fuzzcount import tried
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tritonops.errors import InputError
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog
from tritonops.sizing.model_source import load_model_spec, safetensors_file_totals, safetensors_totals
from tritonops.sizing.model_spec import ModelSpec, model_spec_from_config

TRIED = tried                 # shared: the run's summary prints it (conftest.py)
LOADED: Counter = Counter()   # of those, how many loaded (sizing: how many fit)
EXAMPLES = {"model config dicts": 1000, "model sizing of accepted configs": 300, "model config.json bytes": 300,
            "model safetensors headers": 600, "model safetensors bytes": 600}
WORK = Path(tempfile.gettempdir()) / f"tritonops-fuzz-{os.getpid()}"  # made by the fixture: none left when deselected


@pytest.fixture(autouse=True, scope="module")
def _fuzz_files_folder():
    WORK.mkdir(mode=0o700)
    yield
    shutil.rmtree(WORK, ignore_errors=True)


def fuzz(name: str):
    return settings(max_examples=EXAMPLES[name], deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# --- values ----------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
HOSTILE = st.one_of(
    st.sampled_from([NAN, INF, -INF, 0, -1, -0.0, 0.5, 1e308, 2**53 + 1, 2**63, 2**64, 10**30, -(2**63),
                     True, False, None, "", "4096", "nan", "-1", [], {}, [4096], [None], {"a": 1}]),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.lists(st.one_of(st.integers(), st.text(max_size=4), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=3),
)
SANE = st.one_of(st.integers(min_value=1, max_value=2**16), st.integers(min_value=1, max_value=4096).map(float))
VALUE = st.one_of(SANE, SANE, HOSTILE)   # sane twice as often: deeper paths get reached

NUMBER_KEYS = (
    "hidden_size", "n_embd", "d_model", "num_hidden_layers", "n_layer", "num_layers", "num_attention_heads",
    "n_head", "num_heads", "n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
    "head_dim", "intermediate_size", "ffn_dim", "n_inner", "ffn_hidden_size", "vocab_size", "padded_vocab_size",
    "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
    "max_sequence_length", "max_seq_length", "seq_len", "sliding_window", "kv_lora_rank", "qk_rope_head_dim",
    "num_experts", "num_local_experts", "n_routed_experts", "num_experts_per_tok", "moe_topk",
    "moe_intermediate_size", "shared_expert_intermediate_size")
OTHER_KEYS = {
    "model_type": st.one_of(st.sampled_from(["llama", "qwen2", "gemma2", "opt", "deepseek_v3", "mixtral"]), HOSTILE),
    "torch_dtype": st.one_of(st.sampled_from(["bfloat16", "float16", "float32", "torch.float16", "int4"]), HOSTILE),
    "dtype": HOSTILE,
    "use_sliding_window": HOSTILE,
    "multi_query": HOSTILE,
    "tie_word_embeddings": HOSTILE,
    "vision_config": HOSTILE,
    "layer_types": st.one_of(st.lists(st.sampled_from(["full_attention", "sliding_attention"]), max_size=4), HOSTILE),
    "rope_scaling": st.one_of(HOSTILE, st.fixed_dictionaries(
        {"rope_type": st.one_of(st.sampled_from(["yarn", "linear", "llama3", "dynamic", "default"]), HOSTILE)},
        optional={"factor": VALUE, "original_max_position_embeddings": VALUE, "type": HOSTILE})),
    "quantization_config": st.one_of(HOSTILE, st.fixed_dictionaries(
        {"quant_method": st.one_of(st.sampled_from(["awq", "gptq", "fp8", "bitsandbytes", ""]), HOSTILE)},
        optional={"bits": VALUE, "w_bit": VALUE, "group_size": st.one_of(st.just(-1), VALUE),
                  "q_group_size": VALUE})),
}
BASE = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 256,
        "torch_dtype": "bfloat16"}
OVERRIDES = st.dictionaries(st.sampled_from(NUMBER_KEYS), VALUE, max_size=8).flatmap(
    lambda numbers: st.fixed_dictionaries({}, optional=OTHER_KEYS).map(lambda other: {**numbers, **other}))
CONFIGS = st.one_of(
    OVERRIDES.map(lambda o: {**BASE, **o}),
    st.tuples(OVERRIDES, OVERRIDES).map(lambda t: {**BASE, **t[0], "text_config": {**BASE, **t[1]}}),
    OVERRIDES,                                              # no base: keys missing as well
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                 lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                 max_leaves=12),
)

SIZES = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
         "intermediate_size", "vocab_size", "max_model_len", "max_position_embeddings")


def spec_or_typed_error(config) -> ModelSpec | None:
    try:
        return model_spec_from_config(config, "fuzz", where="fuzz/config.json")
    except InputError as err:
        assert "fuzz/config.json" in str(err) and "\n" not in str(err) and len(str(err)) < 600
        return None


def assert_made_of_sizes(spec: ModelSpec) -> None:
    for f in fields(spec):
        value = getattr(spec, f.name)
        if f.type in ("int", "int | None") and value is not None:
            assert type(value) is int and value >= 0, (f.name, value)
    for name in SIZES:
        assert getattr(spec, name) >= 1, name
    if spec.quantization is not None:
        assert spec.quantization.bits is None or 1 <= spec.quantization.bits <= 64
        assert spec.quantization.group_size is None or spec.quantization.group_size >= 1


# --- config.json ------------------------------------------------------------------------------

@fuzz("model config dicts")
@given(CONFIGS)
def test_any_config_dict_loads_as_sizes_or_is_a_typed_error(config):
    TRIED["model config dicts"] += 1
    spec = spec_or_typed_error(config)
    if spec is not None:
        LOADED["model config dicts"] += 1
        assert_made_of_sizes(spec)


H200 = gpu_spec_from_catalog("h200:8")


@fuzz("model sizing of accepted configs")
@given(st.dictionaries(st.sampled_from(NUMBER_KEYS), st.one_of(SANE, st.integers(min_value=0, max_value=2**40)),
                       max_size=8).flatmap(lambda numbers: st.fixed_dictionaries({}, optional=OTHER_KEYS).map(
                           lambda other: {**BASE, **numbers, **other}))
       .filter(lambda c: spec_or_typed_error(c) is not None))
def test_what_loads_is_sized_without_an_untyped_error_or_a_nonsense_fit(config):
    TRIED["model sizing of accepted configs"] += 1
    try:
        plan = size_engine(spec_or_typed_error(config), H200, SizingRequest(vllm_version="0.10.2"))
    except InputError:
        return
    LOADED["model sizing of accepted configs"] += plan.fits
    numbers = [plan.max_model_len, plan.kv_cache_tokens, plan.weights_bytes_per_gpu, plan.kv_bytes_per_token]
    assert all(isinstance(n, int) and n >= 0 for n in numbers)
    assert 0 < plan.gpu_memory_utilization <= 1 and math.isfinite(plan.gpu_memory_utilization)
    if plan.fits:
        assert 1 <= plan.max_model_len <= plan.kv_cache_tokens
        assert plan.memory.weights + plan.memory.kv_cache <= plan.memory.budget


JSON_TEXT = st.one_of(
    CONFIGS.map(lambda c: json.dumps(c).encode()),
    st.tuples(CONFIGS, st.integers(min_value=0, max_value=200)).map(lambda t: json.dumps(t[0]).encode()[:t[1]]),
    st.binary(max_size=300),
    st.integers(min_value=1, max_value=5000).map(lambda n: b"[" * n + b"]" * n),
)


@fuzz("model config.json bytes")
@given(JSON_TEXT)
def test_any_config_json_file_loads_or_is_a_typed_error(data):
    TRIED["model config.json bytes"] += 1
    directory = WORK / f"model-{TRIED['model config.json bytes']}"
    directory.mkdir()
    (directory / "config.json").write_bytes(data)
    try:
        assert_made_of_sizes(load_model_spec(str(directory)))
        LOADED["model config.json bytes"] += 1
    except InputError as err:
        assert str(directory / "config.json") in str(err) and "\n" not in str(err)


# --- safetensors ------------------------------------------------------------------------------

DTYPES = st.one_of(st.sampled_from(["BF16", "F16", "F32", "I8", "U8", "F8_E4M3", "I64", "Q4"]), HOSTILE)
SMALL = st.integers(min_value=-4, max_value=64)
TENSOR = st.one_of(
    st.fixed_dictionaries({}, optional={"dtype": DTYPES,
                                        "shape": st.one_of(st.lists(SMALL, max_size=4), HOSTILE),
                                        "data_offsets": st.one_of(st.lists(SMALL.map(lambda n: n * 8), min_size=2,
                                                                           max_size=2), HOSTILE)}),
    HOSTILE,
)
HEADERS = st.dictionaries(st.one_of(st.just("__metadata__"), st.text(max_size=10)), TENSOR, max_size=5)


def consistent_tensor(shape: list[int], dtype: str, begin: int) -> dict:
    count = math.prod(shape)
    width = {"BF16": 2, "F16": 2, "F32": 4, "I8": 1}[dtype]
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, begin + count * width]}


def laid_out(tensors: list[tuple[list[int], str]]) -> dict:
    header, begin = {}, 0
    for i, (shape, dtype) in enumerate(tensors):
        header[f"t{i}"] = consistent_tensor(shape, dtype, begin)
        begin = header[f"t{i}"]["data_offsets"][1]
    return header


GOOD_HEADERS = st.lists(st.tuples(st.lists(st.integers(min_value=0, max_value=6), max_size=3),
                                  st.sampled_from(["BF16", "F16", "F32", "I8"])), max_size=4).map(laid_out)


def header_file(header: dict, data_bytes: int | None, length_delta: int) -> bytes:
    """The file for `header`: its tensors' data (or `data_bytes` of zeros), the length field off
    by `length_delta`."""
    raw = json.dumps(header).encode()
    if data_bytes is None:
        ends = [t["data_offsets"][1] for t in header.values() if isinstance(t, dict)
                and isinstance(t.get("data_offsets"), list) and len(t["data_offsets"]) == 2
                and isinstance(t["data_offsets"][1], int)]
        data_bytes = max([0, *ends]) if max([0, *ends]) < 10**6 else 0
    return struct.pack("<Q", max(len(raw) + length_delta, 0)) + raw + b"\0" * data_bytes


def header_or_typed_error(data: bytes, fuzzer: str) -> None:
    path = WORK / f"{TRIED[fuzzer]}-{fuzzer.split()[-1]}.safetensors"
    path.write_bytes(data)
    try:
        total_bytes, params = safetensors_file_totals(path)
    except InputError as err:
        assert str(path) in str(err) and "\n" not in str(err) and len(str(err)) < 600
        return
    LOADED[fuzzer] += 1
    header_bytes = struct.unpack("<Q", data[:8])[0]
    assert (type(total_bytes), type(params)) == (int, int)
    assert total_bytes == len(data) - 8 - header_bytes and params >= 0


@fuzz("model safetensors headers")
@given(st.one_of(HEADERS, GOOD_HEADERS), st.one_of(st.none(), st.integers(min_value=0, max_value=600)),
       st.sampled_from([0, 0, 0, -1, 1, 10**6]))
def test_any_safetensors_header_loads_or_is_a_typed_error(header, data_bytes, length_delta):
    TRIED["model safetensors headers"] += 1
    header_or_typed_error(header_file(header, data_bytes, length_delta), "model safetensors headers")


@fuzz("model safetensors bytes")
@given(st.one_of(st.binary(max_size=300),
                 st.binary(max_size=300).map(lambda b: struct.pack("<Q", len(b)) + b),
                 st.tuples(st.integers(min_value=0, max_value=2**64 - 1), st.binary(max_size=64)).map(
                     lambda t: struct.pack("<Q", t[0]) + t[1])))
def test_any_bytes_as_safetensors_load_or_are_a_typed_error(data):
    TRIED["model safetensors bytes"] += 1
    header_or_typed_error(data, "model safetensors bytes")


def test_the_good_headers_are_counted_exactly():
    header = laid_out([([4, 4], "BF16"), ([3], "F32"), ([], "I8")])
    assert safetensors_totals(header, "x", data_bytes=45) == (45, 20)


def test_zz_every_fuzzer_tried_its_examples(capsys):
    if not all(TRIED[name] for name in EXAMPLES):
        pytest.skip("run the whole file to count the examples")
    with capsys.disabled():
        print("\nfuzz examples tried (loaded or fitting): " + ", ".join(
            f"{name} {TRIED[name]} ({LOADED[name]})" for name in EXAMPLES) + f"; total {sum(TRIED[name] for name in EXAMPLES)}")
    for name, wanted in EXAMPLES.items():
        assert TRIED[name] >= wanted * 0.9, (name, TRIED[name])
