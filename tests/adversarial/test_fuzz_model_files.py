"""Fuzzing the model files sizing reads: config.json (as a dict and as bytes), safetensors
headers (as generated JSON headers and as raw bytes) and the sizing of whatever is accepted.

Every input either loads or raises our typed error (InputError; ConfigError is one), never
another exception, a hang or unbounded memory; and what loads is made of sizes (positive whole
numbers), so no plan "fits" on nonsense. A valid model directory (config.json and safetensors
shards the test lays out itself) sizes to a plan whose weights are the bytes of the tensors it
wrote. Each fuzzer checks that it tried its examples and that enough of them loaded (tests/support/fuzzcount.py).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import struct
import tempfile
from dataclasses import fields
from pathlib import Path

import pytest
from tests.support.fuzzcount import accepted, fuzzed, tried
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tritonops.errors import InputError
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog
from tritonops.sizing.memory_model import WEIGHTS_OVERHEAD_FRACTION
from tritonops.sizing.model_source import load_model_spec, safetensors_file_totals, safetensors_totals
from tritonops.sizing.model_spec import ModelSpec, model_spec_from_config

TRIED = tried                 # shared: the run's summary prints it (conftest.py)
LOADED = accepted             # of those, how many loaded (sizing: how many were sized)
EXAMPLES = {"model config dicts": 1000, "model sizing of accepted configs": 300, "model config.json bytes": 300,
            "model safetensors headers": 600, "model safetensors bytes": 600, "model directories sized": 300}
WORK = Path(tempfile.gettempdir()) / f"tritonops-fuzz-{os.getpid()}"  # made by the fixture: none left when deselected


@pytest.fixture(autouse=True, scope="module")
def _fuzz_files_folder():
    WORK.mkdir(mode=0o700)
    yield
    shutil.rmtree(WORK, ignore_errors=True)


def run_fuzzer(name: str, fuzzer, accepted_share: float) -> None:
    fuzzed(name, fuzzer, examples=EXAMPLES[name], accepted_share=accepted_share)


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
def _fuzz_config_dicts(config):
    TRIED["model config dicts"] += 1
    spec = spec_or_typed_error(config)
    if spec is not None:
        LOADED["model config dicts"] += 1
        assert_made_of_sizes(spec)


def test_any_config_dict_loads_as_sizes_or_is_a_typed_error():
    run_fuzzer("model config dicts", _fuzz_config_dicts, accepted_share=0.03)


H200 = gpu_spec_from_catalog("h200:8")


@fuzz("model sizing of accepted configs")
@given(st.dictionaries(st.sampled_from(NUMBER_KEYS), st.one_of(SANE, st.integers(min_value=0, max_value=2**40)),
                       max_size=8).flatmap(lambda numbers: st.fixed_dictionaries({}, optional=OTHER_KEYS).map(
                           lambda other: {**BASE, **numbers, **other}))
       .filter(lambda c: spec_or_typed_error(c) is not None))
def _fuzz_sizing(config):
    TRIED["model sizing of accepted configs"] += 1
    try:
        plan = size_engine(spec_or_typed_error(config), H200, SizingRequest(vllm_version="0.10.2"))
    except InputError:
        return
    LOADED["model sizing of accepted configs"] += 1
    numbers = [plan.max_model_len, plan.kv_cache_tokens, plan.weights_bytes_per_gpu, plan.kv_bytes_per_token]
    assert all(isinstance(n, int) and n >= 0 for n in numbers)
    assert 0 < plan.gpu_memory_utilization <= 1 and math.isfinite(plan.gpu_memory_utilization)
    if plan.fits:
        assert 1 <= plan.max_model_len <= plan.kv_cache_tokens
        assert plan.memory.weights + plan.memory.kv_cache <= plan.memory.budget


def test_what_loads_is_sized_without_an_untyped_error_or_a_nonsense_fit():
    run_fuzzer("model sizing of accepted configs", _fuzz_sizing, accepted_share=0.5)


JSON_TEXT = st.one_of(
    CONFIGS.map(lambda c: json.dumps(c).encode()),
    st.dictionaries(st.sampled_from(NUMBER_KEYS), SANE, max_size=4).map(lambda o: json.dumps({**BASE, **o}).encode()),
    st.tuples(CONFIGS, st.integers(min_value=0, max_value=200)).map(lambda t: json.dumps(t[0]).encode()[:t[1]]),
    st.binary(max_size=300),
    st.integers(min_value=1, max_value=5000).map(lambda n: b"[" * n + b"]" * n),
)


@fuzz("model config.json bytes")
@given(JSON_TEXT)
def _fuzz_config_json_bytes(data):
    TRIED["model config.json bytes"] += 1
    directory = WORK / f"model-{TRIED['model config.json bytes']}"
    directory.mkdir()
    (directory / "config.json").write_bytes(data)
    try:
        assert_made_of_sizes(load_model_spec(str(directory)))
        LOADED["model config.json bytes"] += 1
    except InputError as err:
        assert str(directory / "config.json") in str(err) and "\n" not in str(err)


def test_any_config_json_file_loads_or_is_a_typed_error():
    run_fuzzer("model config.json bytes", _fuzz_config_json_bytes, accepted_share=0.05)


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
def _fuzz_safetensors_headers(header, data_bytes, length_delta):
    TRIED["model safetensors headers"] += 1
    header_or_typed_error(header_file(header, data_bytes, length_delta), "model safetensors headers")


def test_any_safetensors_header_loads_or_is_a_typed_error():
    run_fuzzer("model safetensors headers", _fuzz_safetensors_headers, accepted_share=0.1)


def edited_bytes(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    """`data` with each (position, bytes deleted there, bytes inserted there) applied in turn."""
    for position, deleted, inserted in edits:
        position %= len(data) + 1
        data = data[:position] + inserted + data[position + deleted:]
    return data


GOOD_FILES = GOOD_HEADERS.map(lambda header: header_file(header, None, 0))


@fuzz("model safetensors bytes")
@given(st.one_of(st.binary(max_size=300),
                 st.binary(max_size=300).map(lambda b: struct.pack("<Q", len(b)) + b),
                 st.tuples(st.integers(min_value=0, max_value=2**64 - 1), st.binary(max_size=64)).map(
                     lambda t: struct.pack("<Q", t[0]) + t[1]),
                 GOOD_FILES,
                 st.builds(edited_bytes, GOOD_FILES,
                           st.lists(st.tuples(st.integers(0, 10**4), st.integers(0, 2), st.binary(max_size=2)),
                                    min_size=1, max_size=2))))
def _fuzz_safetensors_bytes(data):
    TRIED["model safetensors bytes"] += 1
    header_or_typed_error(data, "model safetensors bytes")


def test_any_bytes_as_safetensors_load_or_are_a_typed_error():
    run_fuzzer("model safetensors bytes", _fuzz_safetensors_bytes, accepted_share=0.15)


# --- a valid model directory, sized -------------------------------------------------------------

# Bytes per element, from the safetensors format (not from tritonops), and per torch dtype.
ELEMENT_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
                 "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
TORCH_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
TENSORS = st.lists(st.tuples(st.lists(st.integers(min_value=0, max_value=40), max_size=3),
                             st.sampled_from(sorted(ELEMENT_BYTES))), max_size=5)


@st.composite
def shard(draw) -> tuple[bytes, int, int]:
    """(a .safetensors file, its tensors' bytes, their elements): tensors laid out one after another,
    the header listing them in any order, maybe with __metadata__."""
    tensors, header, begin, elements = draw(TENSORS), {}, 0, 0
    for index, (shape, dtype) in enumerate(tensors):
        count = math.prod(shape)
        header[f"model.layers.{index}.weight"] = {"dtype": dtype, "shape": shape,
                                                  "data_offsets": [begin, begin + count * ELEMENT_BYTES[dtype]]}
        begin, elements = begin + count * ELEMENT_BYTES[dtype], elements + count
    names = draw(st.permutations(list(header)))
    header = {name: header[name] for name in names}
    if draw(st.booleans()):
        header = {"__metadata__": {"format": "pt"}, **header}
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + bytes(begin), begin, elements


MODEL_CONFIG = st.fixed_dictionaries({
    "model_type": st.just("llama"), "hidden_size": st.sampled_from([64, 128, 256]),
    "num_hidden_layers": st.integers(min_value=1, max_value=4), "num_attention_heads": st.just(8),
    "num_key_value_heads": st.sampled_from([4, 8]), "intermediate_size": st.sampled_from([128, 512]),
    "vocab_size": st.sampled_from([128, 1024, 32000]),
    "max_position_embeddings": st.sampled_from([256, 2048, 8192]),
    "torch_dtype": st.sampled_from(sorted(TORCH_BYTES))},
    optional={"quantization_config": st.just({"quant_method": "awq", "bits": 4, "group_size": 128})},
).map(lambda config: {**config, "head_dim": config["hidden_size"] // 8})
# vLLM versions whose weights term is the checkpoint's bytes (0.25's is measured per tensor, except quantized)
VERSIONS = ("0.6.3.post1", "0.10.2", "0.20.2")


@fuzz("model directories sized")
@given(MODEL_CONFIG, st.lists(shard(), min_size=1, max_size=3), st.one_of(st.none(), st.integers(1, 2**40)),
       st.sampled_from(VERSIONS), st.sampled_from([None, 1, 2, 4]))
def _fuzz_model_directories(config, shards, index_total, version, tp):
    tensor_bytes, elements = sum(s[1] for s in shards), sum(s[2] for s in shards)
    assume(tensor_bytes > 0)  # 0 weight bytes means "not known" to the sizer: it estimates from the config
    TRIED["model directories sized"] += 1
    directory = WORK / f"dir-{TRIED['model directories sized']}"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config))
    for number, (data, _, _) in enumerate(shards, start=1):
        (directory / f"model-{number:05}-of-{len(shards):05}.safetensors").write_bytes(data)
    if index_total is not None:  # an index beside the shards: the shards' own headers win
        (directory / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": index_total}}))
    quantized = "quantization_config" in config

    spec = load_model_spec(str(directory))
    assert (spec.weight_bytes, spec.param_count) == (tensor_bytes, 0 if quantized else elements)
    plan = size_engine(spec, H200, SizingRequest(vllm_version=version, tensor_parallel_size=tp))
    LOADED["model directories sized"] += 1

    # the checkpoint as loaded: its bytes, unless vLLM casts it to a dtype of another width
    if quantized or TORCH_BYTES[config["torch_dtype"]] == TORCH_BYTES[plan.dtype]:
        checkpoint = tensor_bytes
    else:
        checkpoint = elements * TORCH_BYTES[plan.dtype]
    # each GPU holds its 1/TP share and the allowances the sizer documents: 0.5 % more, the rotary cache
    rope_cache = config["max_position_embeddings"] * config["head_dim"] * 4
    assert plan.tensor_parallel_size <= config["num_key_value_heads"]  # no replicated K/V heads to add
    assert plan.memory.weights == plan.weights_bytes_per_gpu == \
        int(checkpoint / plan.tensor_parallel_size * (1 + WEIGHTS_OVERHEAD_FRACTION)) + rope_cache


def test_a_valid_model_directory_sizes_to_weights_of_its_tensors_bytes():
    run_fuzzer("model directories sized", _fuzz_model_directories, accepted_share=1.0)


def test_the_good_headers_are_counted_exactly():
    header = laid_out([([4, 4], "BF16"), ([3], "F32"), ([], "I8")])
    assert safetensors_totals(header, "x", data_bytes=45) == (45, 20)
