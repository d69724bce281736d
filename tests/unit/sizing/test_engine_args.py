"""Which model.json keys each vLLM version takes, and CPU memory for the KV cache per version."""

import pytest
from packaging.version import Version

from tritonops.errors import InputError
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_arg_keys import accepts, check_engine_args
from tritonops.sizing.engine_plan import SizingRequest
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog
from tritonops.sizing.model_catalog import find_catalog_model

QWEN7 = find_catalog_model("Qwen/Qwen2.5-7B-Instruct")
GIB = 2**30


@pytest.mark.parametrize("key, version, ok", [
    ("disable_log_requests", Version("0.10.0"), True), ("disable_log_requests", Version("0.10.1"), False),
    ("enable_log_requests", Version("0.10.0"), False), ("enable_log_requests", Version("0.22.1"), True),
    ("swap_space", Version("0.16.0"), True), ("swap_space", Version("0.17.0"), False),
    ("kv_offloading_size", Version("0.11.0"), False), ("kv_offloading_size", Version("0.12.0"), True),
    ("distributed_executor_backend", Version("0.5.0"), False), ("no_such_argument", Version("0.22.1"), False),
])
def test_keys_by_version(key, version, ok):
    assert accepts(key, version) is ok


def test_a_removed_key_is_an_error_naming_the_key_and_the_version():
    with pytest.raises(InputError) as err:
        check_engine_args(["model", "disable_log_requests"], "0.22.1", Version("0.22.1"), "hosts.yml:3")
    assert str(err.value) == ("hosts.yml:3: vLLM 0.22.1 does not accept engine argument 'disable_log_requests' "
                              "(removed in 0.10.1; use enable_log_requests)")


def test_a_key_too_new_for_the_version_says_where_it_starts():
    with pytest.raises(InputError, match=r"vLLM 0.10.2 does not accept engine argument 'kv_offloading_size' "
                                         r"\(first in 0.12.0\)"):
        check_engine_args(["kv_offloading_size"], "0.10.2", Version("0.10.2"))


def test_an_unknown_key_gets_a_did_you_mean():
    with pytest.raises(InputError, match="no engine argument 'gpu_memory_utilisation'; did you mean "
                                         "gpu_memory_utilization"):
        check_engine_args(["gpu_memory_utilisation"], "0.22.1", Version("0.22.1"))


def size(version, swap, gpu="h200", ram=512 * GIB, **request):
    return size_engine(QWEN7, gpu_spec_from_catalog(gpu), SizingRequest(
        model_ref="q", vllm_version=version, swap_space_gib=swap, host_ram_bytes=ram, **request))


def test_swap_on_the_pinned_version_is_cpu_kv_offloading_over_all_tp_ranks():
    plan = size("0.22.1", 8, gpu="h200:2", tensor_parallel_size=2)
    assert (plan.model_json["kv_offloading_size"], plan.model_json["kv_offloading_backend"]) == (16, "native")
    assert plan.cpu_kv_cache_bytes == 16 * GIB and plan.swap_space is None and plan.fits


def test_where_a_version_has_both_v1_gets_offloading_not_swap_blocks():
    plan = size("0.14.0", 4)
    assert "swap_space" not in plan.model_json and plan.model_json["kv_offloading_size"] == 4
    (reason,) = [r for r in plan.reasons if r.field == "kv_offloading_size"]
    assert reason.value == "4" and reason.why.endswith("vLLM V1 allocates no swap blocks")


def test_v1_before_offloading_writes_swap_space_and_says_it_is_only_validated():
    plan = size("0.10.2", 4)
    assert plan.model_json["swap_space"] == 4 and plan.cpu_kv_cache_bytes == 0
    assert any("only validated" in n for n in plan.notes)


def test_v0_swap_space_takes_host_ram_per_gpu():
    plan = size("0.6.3", 6, gpu="a100-80gb:2", tensor_parallel_size=2)
    assert plan.model_json["swap_space"] == 6 and plan.cpu_kv_cache_bytes == 12 * GIB


def test_v0_swap_vllm_refuses_is_a_problem():
    plan = size("0.6.3", 16, gpu="a100-80gb:2", tensor_parallel_size=2, ram=32 * GIB)
    assert not plan.fits
    assert any("is more than 70 % of the host's 32.00 GiB RAM: vLLM 0.6.3 refuses it" in p for p in plan.problems)


def test_zero_turns_the_default_swap_off_and_writes_nothing_where_there_is_none():
    assert size("0.6.3", 0, gpu="a100-80gb").model_json["swap_space"] == 0
    plan = size("0.22.1", 0)
    assert "swap_space" not in plan.model_json and "kv_offloading_size" not in plan.model_json


def test_swap_is_checked_like_every_request_number():
    with pytest.raises(InputError, match="swap_space_gib must be at least 0"):
        size("0.22.1", -1)
