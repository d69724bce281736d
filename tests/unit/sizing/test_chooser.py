"""The memory model and the chooser, by equality on real architectures and cards."""

from dataclasses import replace

import pytest
from packaging.version import Version

from tritonops.errors import InputError
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import Reason, SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog
from tritonops.sizing.memory_model import kv_bytes_per_token
from tritonops.sizing.model_catalog import find_catalog_model
from tritonops.sizing.tp_rules import tp_problem, valid_tp_sizes
from tritonops.sizing.versions import DEFAULT_VLLM_VERSION, parse_version, profile_for

QWEN7 = find_catalog_model("Qwen/Qwen2.5-7B-Instruct")
QWEN18 = find_catalog_model("Qwen/Qwen1.5-1.8B-Chat")


def size(model, gpu, **kw):
    return size_engine(model, gpu_spec_from_catalog(gpu), SizingRequest(model_ref=model.name, **kw))


# -- KV bytes per token (reference 1.3, checked against printed CPU-block counts) ---------
@pytest.mark.parametrize("model_id, tp, expected", [
    ("meta-llama/Meta-Llama-3-8B-Instruct", 1, 131_072),
    ("meta-llama/Llama-2-7b-chat-hf", 1, 524_288),
    ("microsoft/phi-2", 1, 327_680),
    ("facebook/opt-125m", 1, 36_864),
    ("codellama/CodeLlama-13b-Instruct-hf", 2, 409_600),
    ("Qwen/Qwen3-235B-A22B", 4, 48_128),          # row 3: 2 (K, V) x 94 layers x 1 KV head x 128 x 2 B
    ("Qwen/Qwen3-235B-A22B", 8, 48_128),          # replicated: no smaller at TP 8
])
def test_kv_bytes_per_token(model_id, tp, expected):
    assert kv_bytes_per_token(find_catalog_model(model_id), tp, 2) == expected


def test_tp_must_divide_heads_and_respect_kv_heads():
    assert valid_tp_sizes(QWEN7, 8) == [1, 2, 4]
    assert "divisible" in tp_problem(QWEN7, 8)
    assert "multiple of the 4 KV heads" in tp_problem(QWEN7, 7)
    assert valid_tp_sizes(find_catalog_model("meta-llama/Meta-Llama-3-8B-Instruct"), 8) == [1, 2, 4, 8]


# -- acceptance cases of the issue --------------------------------------------------------
def test_qwen25_7b_on_one_2080ti_does_not_fit_in_fp16_and_names_what_would():
    plan = size(QWEN7, "2080ti")
    assert not plan.fits and plan.dtype == "float16"
    assert plan.problems[0].startswith("does not fit in float16")
    kinds = [a.kind for a in plan.alternatives]
    assert "tensor_parallel" in kinds and "quantized" in kinds
    tp = next(a for a in plan.alternatives if a.kind == "tensor_parallel")
    assert tp.tensor_parallel_size == 2 and tp.max_model_len == 32768


def test_qwen25_7b_on_4_a100_80gb_takes_one_gpu_and_the_full_context():
    plan = size(QWEN7, "a100-80gb:4")
    assert plan.fits
    assert (plan.tensor_parallel_size, plan.max_model_len, plan.dtype) == (1, 32768, "bfloat16")
    assert plan.max_num_seqs == 256   # A100 is excluded from the >= 70 GiB defaults since 0.9


def test_prefer_latency_takes_the_most_gpus():
    assert size(QWEN7, "a100-80gb:4", prefer="latency").tensor_parallel_size == 4


def test_qwen15_18b_on_2080ti_fits_in_fp16():
    plan = size(QWEN18, "2080ti")
    assert plan.fits and plan.dtype == "float16"
    assert 4096 <= plan.max_model_len <= plan.kv_cache_tokens and plan.max_model_len % 16 == 0


def test_model_larger_than_all_gpus_together_is_offered_the_fewest_hosts_that_hold_it():
    llama70 = find_catalog_model("meta-llama/Llama-3.1-70B-Instruct")
    plan = size(llama70, "t4:2")
    assert not plan.fits
    first = next(a for a in plan.alternatives if a.kind == "pipeline_parallel")
    hosts = first.pipeline_parallel_size
    assert first.available and hosts > 2 and first.gpus_needed == hosts * first.tensor_parallel_size
    assert size(llama70, "t4:2", pipeline_parallel_size=hosts).max_model_len == first.max_model_len > 0
    assert size(llama70, "t4:2", pipeline_parallel_size=hosts - 1).max_model_len == 0   # one host fewer: nothing


def test_given_tp_that_does_not_divide_heads_is_a_problem():
    plan = size(QWEN7, "a100-80gb:8", tensor_parallel_size=8)
    assert not plan.fits and any("divisible" in p for p in plan.problems)


def test_given_max_model_len_is_checked_not_chosen():
    ok = size(QWEN18, "2080ti", max_model_len=4096)
    assert ok.fits and ok.max_model_len == 4096
    too_long = size(QWEN18, "2080ti", max_model_len=32768, enforce_eager=True)
    assert not too_long.fits and "larger than" in too_long.problems[0]
    assert any(a.kind == "shorter_context" for a in too_long.alternatives)


def test_bf16_request_below_cc8_is_refused():
    plan = size(QWEN18, "t4", dtype="bfloat16")
    assert not plan.fits and "Bfloat16" in plan.problems[0]


def test_gemma2_falls_back_to_float32_below_cc8():
    plan = size(find_catalog_model("google/gemma-2-9b-it"), "v100-32gb:2", vllm_version="0.6.2")
    assert plan.dtype == "float32" and plan.rough


def test_quantization_minimum_compute_capability():
    awq = replace(QWEN7, quantization=__import__("tritonops.sizing.model_spec", fromlist=["Quantization"])
                  .Quantization("awq", 4, 128), weight_bytes=5_500_000_000)
    plan = size(awq, "v100-32gb", vllm_version="0.5.5")
    assert any("Minimum capability: 75" in p for p in plan.problems)


def test_v100_is_refused_by_images_from_25_01():
    plan = size(QWEN18, "v100-32gb")
    assert not plan.fits and "7.5+" in plan.problems[0]


def test_every_field_has_a_reason_and_assumed_defaults_are_named():
    plan = size(QWEN7, "h200")
    for field in ("tensor_parallel_size", "max_model_len", "dtype", "kv_cache_dtype", "gpu_memory_utilization",
                  "enforce_eager", "max_num_seqs", "max_num_batched_tokens", "kv_cache_tokens"):
        (reason,) = [r for r in plan.reasons if r.field == field]
        assert reason.value == str(getattr(plan, field)).lower() and reason.why, field
    assert plan.assumed == ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens")
    assert (plan.max_num_seqs, plan.max_num_batched_tokens, plan.gpu_memory_utilization) == (1024, 8192, 0.92)


# -- versions -----------------------------------------------------------------------------
def test_default_version_and_parse():
    assert DEFAULT_VLLM_VERSION == "0.25.0"
    assert parse_version("0.6.3.post1") == Version("0.6.3.post1")
    assert parse_version("0.9.0rc1+1958ee56.nv25.6.cu129").release == (0, 9, 0)
    with pytest.raises(InputError, match="--vllm-version"):
        parse_version("latest")
    with pytest.raises(InputError, match="oldest"):
        profile_for("0.2.5")


@pytest.mark.parametrize("version, engine, formula, util, swap, auto, graphs, null_block", [
    ("0.4.2", "V0", "v0_peak_growth", 0.9, True, False, False, False),
    ("0.6.4.post1", "V0", "v0_torch_peak", 0.9, True, False, False, False),
    ("0.7.3", "V0", "v0_profiled_increase", 0.9, True, False, False, False),
    ("0.8.5", "V1", "v1_torch_peak", 0.9, True, False, False, False),
    ("0.10.2", "V1", "v1_requested_minus_increase", 0.9, True, False, False, False),
    ("0.14.0", "V1", "v1_requested_minus_increase", 0.9, True, True, False, False),
    ("0.18.0", "V1", "v1_requested_minus_increase", 0.9, False, True, False, False),
    ("0.22.1", "V1", "v1_requested_minus_increase", 0.92, False, True, True, False),
    ("0.33.0", "V1", "v1_requested_minus_increase", 0.92, False, True, True, True),
])
def test_profiles_per_version(version, engine, formula, util, swap, auto, graphs, null_block):
    p = profile_for(version, (9, 0))
    assert (p.engine, p.memory_formula, p.default_gpu_memory_utilization, p.accepts_swap_space,
            p.auto_max_model_len, p.subtracts_cudagraph_memory, p.reserves_null_block) == \
        (engine, formula, util, swap, auto, graphs, null_block)


def test_v1_falls_back_to_v0_below_cc8_until_0_11():
    assert profile_for("0.10.2", (7, 5)).engine == "V0"
    assert profile_for("0.11.0", (7, 5)).engine == "V1"


def test_null_block_rule_in_newest_versions():
    assert profile_for("0.33.0").max_tokens_accepted(10) == 144
    assert profile_for("0.22.1").max_tokens_accepted(10) == 160


# -- model.json keys per version ------------------------------------------------------------
def test_swap_space_only_where_the_version_takes_it():
    host_ram = 8 * 2**30   # 4 GiB of swap would pass 40 % of it
    old = size(QWEN18, "3090", vllm_version="0.6.3.post1", host_ram_bytes=host_ram)
    assert old.model_json["swap_space"] == 3 and old.swap_space == 3
    new = size(QWEN18, "3090", host_ram_bytes=host_ram)
    assert "swap_space" not in new.model_json and new.swap_space is None


def test_model_json_for_the_default_version():
    plan = size(QWEN7, "a100-80gb:4")
    assert plan.model_json == {
        "model": "Qwen/Qwen2.5-7B-Instruct", "tensor_parallel_size": 1, "gpu_memory_utilization": 0.92,
        "max_model_len": 32768, "dtype": "bfloat16", "enforce_eager": False, "max_num_seqs": 256,
        "max_num_batched_tokens": 2048}


def test_v0_model_json_leaves_batched_tokens_to_vllm():
    plan = size(QWEN7, "a100-80gb", vllm_version="0.6.3.post1")
    assert "max_num_batched_tokens" not in plan.model_json


# -- other processes on the GPU --------------------------------------------------------------
def test_busy_gpu_lowers_the_default_utilisation_or_is_refused():
    gpu = replace(gpu_spec_from_catalog("h200"), free_bytes=100 * 2**30, other_process_bytes=39 * 2**30)
    plan = size_engine(QWEN7, gpu, SizingRequest())
    assert plan.fits and plan.gpu_memory_utilization < 0.72
    refused = size_engine(QWEN7, gpu, SizingRequest(gpu_memory_utilization=0.9))
    assert not refused.fits and refused.problems[0].startswith("Free memory on device")


def test_bad_utilisation_is_an_input_error():
    with pytest.raises(InputError, match="--gpu-memory-utilization"):
        size(QWEN7, "h200", gpu_memory_utilization=1.5)


def test_a_reason_is_data_and_reads_as_one_line_in_the_json():
    """`plan` shows each field's `why`; --json and release.json carry "field value: why" lines."""
    plan = size(QWEN7, "h200", max_model_len=8192)
    (length,) = [r for r in plan.reasons if r.field == "max_model_len"]
    assert (length.value, length.why) == ("8192", f"as requested; predicted KV cache {plan.kv_cache_tokens} "
                                                  "tokens (accepted)")
    assert str(length) in plan.to_dict()["reasons"]
    assert str(Reason("swap_space", None, "vLLM's default")) == "swap_space: vLLM's default"
    assert str(Reason("dtype", "bfloat16")) == "dtype bfloat16"
