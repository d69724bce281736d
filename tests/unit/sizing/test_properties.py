"""Properties of the chooser over random models and cards (hypothesis)."""


from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_numbers
from tritonops.sizing.model_catalog import MODEL_CATALOG, find_catalog_model
from tritonops.sizing.model_spec import DTYPE_BYTES
from tritonops.sizing.tp_rules import tp_problem
from tritonops.sizing.versions import parse_version

DENSE = sorted(k for k, (c, _) in MODEL_CATALOG.items() if "num_experts" not in c and "num_local_experts" not in c)
MODELS = {k: find_catalog_model(k) for k in MODEL_CATALOG}
VERSIONS = ("0.4.2", "0.6.3.post1", "0.6.4", "0.7.3", "0.8.5", "0.10.2", "0.13.0", "0.19.0", "0.22.1", "0.33.0")

cases = st.fixed_dictionaries({
    "model": st.sampled_from(DENSE),
    "gib": st.integers(min_value=8, max_value=160),
    "cc": st.sampled_from(["7.5", "8.0", "8.6", "8.9", "9.0"]),
    "gpus": st.sampled_from([1, 2, 4, 8]),
    "version": st.sampled_from(VERSIONS),
    "prefer": st.sampled_from(["fewest-gpus", "latency"]),
})
SETTINGS = settings(max_examples=60, deadline=None)


def batched_tokens_for(version: str) -> int | None:
    """A fixed chunked-prefill budget from vLLM 0.8 on (compared as versions: "0.10.2" >= "0.8" is
    False as strings)."""
    return 4096 if parse_version(version) >= Version("0.8.0") else None


def test_the_batch_budget_follows_the_version_not_its_spelling():
    assert [batched_tokens_for(v) for v in ("0.7.3", "0.8.5", "0.10.2", "0.33.0")] == [None, 4096, 4096, 4096]


def plan_for(case, gib=None):
    gpus = gpu_spec_from_numbers(gib or case["gib"], case["cc"], case["gpus"])
    # fixed batch sizes: the >= 70 GiB defaults would otherwise change with the memory
    request = SizingRequest(vllm_version=case["version"], prefer=case["prefer"], max_num_seqs=256,
                            max_num_batched_tokens=batched_tokens_for(case["version"]))
    return size_engine(MODELS[case["model"]], gpus, request)


@SETTINGS
@given(cases)
def test_plan_never_exceeds_the_budget(case):
    plan = plan_for(case)
    if not plan.fits:
        assert plan.problems
        return
    m = plan.memory
    used = m.weights + m.activation + m.non_torch + m.other_processes + m.cudagraph + plan.kv_cache_bytes_per_gpu
    assert used <= m.budget
    assert plan.kv_cache_bytes_per_gpu == plan.kv_cache_tokens * plan.kv_bytes_per_token
    if plan.fits:   # (always here)
        assert 0 < plan.max_model_len <= plan.kv_cache_tokens and plan.max_model_len % 16 == 0
        assert plan.max_model_len <= MODELS[case["model"]].max_model_len


@SETTINGS
@given(cases)
def test_never_bf16_below_cc8(case):
    plan = plan_for(case)
    if case["cc"] == "7.5":
        assert plan.dtype != "bfloat16" and plan.model_json.get("dtype") != "bfloat16"


@SETTINGS
@given(cases)
def test_tp_divides_the_heads_and_fits_the_host(case):
    plan = plan_for(case)
    assert plan.tensor_parallel_size <= case["gpus"]
    assert tp_problem(MODELS[case["model"]], plan.tensor_parallel_size) is None


@SETTINGS
@given(cases, st.integers(min_value=1, max_value=64))
def test_more_memory_never_shortens_the_context(case, extra):
    small, big = plan_for(case), plan_for(case, case["gib"] + extra)
    assert big.max_model_len >= small.max_model_len
    assert big.fits or not small.fits


@SETTINGS
@given(cases)
def test_same_inputs_same_plan(case):
    assert plan_for(case) == plan_for(case)


@SETTINGS
@given(cases)
def test_model_json_keys_are_valid_for_the_version(case):
    from tritonops.sizing.versions import profile_for, unknown_model_json_keys
    plan = plan_for(case)
    cc = tuple(int(x) for x in case["cc"].split("."))
    assert unknown_model_json_keys(plan.model_json, profile_for(case["version"], cc)) == []
    assert DTYPE_BYTES[plan.dtype] >= 2
