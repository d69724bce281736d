"""GPU specs: the catalog, NVML names, manual numbers, probe facts."""

import json
from dataclasses import replace

import pytest

from tests.support.facts import host_facts
from tests.support.paths import FIXTURES
from tritonops.errors import InputError
from tritonops.facts.model import NvidiaFacts
from tritonops.sizing.gpu_catalog import GPU_CATALOG
from tritonops.sizing.gpu_spec import gpu_spec_from_catalog, gpu_spec_from_facts, gpu_spec_from_numbers

NVML = FIXTURES / "nvml" / "nvml-h200x1.json"  # from ../shared/fixtures/nvml
REQUIRED = ("t4", "v100-16gb", "v100-32gb", "2080ti", "3090", "4090", "a10", "l4", "l40s", "a100-40gb",
            "a100-80gb", "h100", "h200")


def test_catalog_has_the_required_cards_with_cuda_below_nvml():
    for key in REQUIRED:
        gpu = GPU_CATALOG[key]
        assert 0 < gpu.cuda_total_bytes < gpu.memory_total_bytes


def test_h200_numbers_are_the_fixture_readings():
    h200 = GPU_CATALOG["h200"]
    assert (h200.memory_total_bytes, h200.cuda_total_bytes, h200.compute_capability) == \
        (150_754_820_096, 150_109_880_320, (9, 0))


def test_h200_catalog_matches_the_nvml_fixture():
    gpu = json.loads(NVML.read_text())["gpus"][0]
    assert GPU_CATALOG["h200"].memory_total_bytes == gpu["memory_v2"]["total"]
    assert GPU_CATALOG["h200"].cuda_total_bytes == gpu["memory_v2"]["total"] - gpu["memory_v2"]["reserved"]


def test_name_count_and_nvml_names():
    spec = gpu_spec_from_catalog("a100-80gb:4")
    assert (spec.count, spec.compute_capability) == (4, (8, 0))
    assert gpu_spec_from_catalog("NVIDIA GeForce RTX 4090").compute_capability == (8, 9)


def test_unknown_gpu_lists_the_catalog_keys():
    with pytest.raises(InputError) as err:
        gpu_spec_from_catalog("rtx9999")
    assert "--gpu" in str(err.value)
    for key in REQUIRED:
        assert key in str(err.value)


def test_manual_card():
    spec = gpu_spec_from_numbers(20, "8.6", 2)
    assert (spec.cuda_total_bytes, spec.compute_capability, spec.count) == (20 * 2**30, (8, 6), 2)
    with pytest.raises(InputError, match="--compute-capability"):
        gpu_spec_from_numbers(20, "eight")


def test_spec_from_probe_facts_uses_the_cuda_total():
    spec = gpu_spec_from_facts(host_facts(8))
    assert (spec.count, spec.cuda_total_bytes, spec.free_bytes, spec.other_process_bytes) == \
        (8, 150_109_880_320, 150_109_880_320, 0)


def test_host_without_gpus_has_no_spec():
    facts = replace(host_facts(1), nvidia=NvidiaFacts(error="no NVIDIA driver"))
    assert gpu_spec_from_facts(facts) is None
