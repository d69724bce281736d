"""The one-line GPU summaries the probe table shows."""

import pytest

from tests.support.paths import FIXTURES
from tritonops.facts.probe_parse import parse_nvml, parse_probe_output
from tritonops.facts.summary import free_vram_summary, gpu_summary, short_gpu_name


@pytest.mark.parametrize("name,short", [
    ("NVIDIA GeForce RTX 2080 Ti", "RTX 2080 Ti"),
    ("NVIDIA H200", "H200"),
    ("Tesla T4", "T4"),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
])
def test_short_gpu_name_drops_every_vendor_prefix(name, short):
    assert short_gpu_name(name) == short


def test_real_h200_pair_summary():
    facts = parse_probe_output((FIXTURES / "real" / "h200x2" / "probe-raw-busy.json").read_text())
    assert gpu_summary(facts.nvidia) == "2× H200 140 GiB NVLink"
    assert free_vram_summary(facts.nvidia) == "119.3 GiB min, 1 GPU(s) busy"


def test_mixed_pcie_host_summary_groups_by_model():
    def gpu(index, name, gib):
        return {"index": index, "name": name, "cc": [8, 9], "nvlink": [],
                "memory": {"total": gib * 1024 ** 3, "free": gib * 1024 ** 3, "used": 0}}

    raw = {"gpus": [gpu(0, "NVIDIA L4", 22), gpu(1, "NVIDIA L4", 22), gpu(2, "NVIDIA L40S", 45)],
           "topology": [[None, 50, 50], [50, None, 50], [50, 50, None]]}
    assert gpu_summary(parse_nvml(raw)) == "2× L4 22 GiB + 1× L40S 45 GiB PCIe"
    assert gpu_summary(parse_nvml({"error": "no NVIDIA driver (libnvidia-ml.so.1 not found)"})) == "no GPUs"
