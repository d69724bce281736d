"""The probe parser, pinned to output captured on real H200 hosts."""

import json

import jsonschema
import pytest

from tests.support.paths import FIXTURES
from tritonops.facts.model import NvidiaFacts, report_from_json, report_to_json
from tritonops.facts.probe_parse import (
    ProbeOutputError,
    cuda_version_text,
    parse_docker,
    parse_nvml,
    parse_probe_output,
)
from tritonops.facts.schema import probe_report_schema

REAL = FIXTURES / "real" / "h200x2"
H200_NVML_TOTAL = 150_754_820_096
H200_RESERVED = 644_939_776
H200_CUDA_TOTAL = 150_109_880_320  # torch.cuda.mem_get_info() total on the same machine


def load(name):
    return (REAL / name).read_text()


def test_real_h200_idle_host_parses_to_two_nvlinked_h200s():
    facts = parse_probe_output(load("probe-raw-idle.json"))
    nvidia = facts.nvidia
    assert nvidia.driver_version == "580.159.04"
    assert nvidia.cuda_driver_version == "13.0"
    assert [gpu.name for gpu in nvidia.gpus] == ["NVIDIA H200", "NVIDIA H200"]
    gpu = nvidia.gpus[0]
    assert gpu.memory_total_bytes == H200_NVML_TOTAL
    assert gpu.memory_reserved_bytes == H200_RESERVED
    assert gpu.cuda_total_bytes == H200_CUDA_TOTAL
    assert gpu.compute_capability == (9, 0)
    assert gpu.nvlink_active_links == 18
    assert gpu.mig_enabled is False and gpu.persistence_mode is True
    assert gpu.processes == () and gpu.errors == ()
    assert [(l.a, l.b, l.kind, l.p2p_read) for l in nvidia.links] == [(0, 1, "NV18", True)]
    assert nvidia.error is None


def test_cuda_total_matches_what_torch_reported_on_the_same_machine():
    line = load("cuda-meminfo.txt").splitlines()[0]
    torch_total = int(line.rsplit("total=", 1)[1])
    facts = parse_probe_output(load("probe-raw-idle.json"))
    assert {gpu.cuda_total_bytes for gpu in facts.nvidia.gpus} == {torch_total}


def test_nvml_totals_match_nvidia_smi_on_the_same_machine():
    rows = [line.split(", ") for line in load("smi-csv.txt").splitlines()[1:]]
    facts = parse_probe_output(load("probe-raw-idle.json"))
    for row, gpu in zip(rows, facts.nvidia.gpus):
        assert int(row[2].split()[0]) * 1024 * 1024 == gpu.memory_total_bytes
        assert row[4] == gpu.compute_capability_str


def test_busy_gpu_lists_the_process_and_less_free_memory():
    facts = parse_probe_output(load("probe-raw-busy.json"))
    busy, idle = facts.nvidia.gpus
    assert len(busy.processes) == 1
    assert busy.processes[0].used_memory_bytes == 22_017_998_848
    assert busy.processes[0].kind == "compute"
    assert busy.memory_free_bytes < idle.memory_free_bytes - 20 * 1024 ** 3
    assert idle.processes == ()


def test_shared_fixture_parses_too_although_its_p2p_call_failed():
    path = FIXTURES / "nvml" / "nvml-h200x2.json"  # copied from ../shared/fixtures/nvml
    nvidia = parse_nvml(json.loads(path.read_text()))
    assert len(nvidia.gpus) == 2
    assert nvidia.gpus[1].cuda_total_bytes == H200_CUDA_TOTAL
    # pynvml's tuple-valued NVML_P2P_CAPS_INDEX_READ broke that capture: unknown, not False
    assert [(l.kind, l.p2p_read) for l in nvidia.links] == [("NV18", None)]


def test_host_without_driver_reports_it_and_no_gpus():
    nvidia = parse_nvml({"error": "no NVIDIA driver (libnvidia-ml.so.1 not found)"})
    assert nvidia == NvidiaFacts(error="no NVIDIA driver (libnvidia-ml.so.1 not found)")


def test_error_on_one_gpu_stays_with_that_gpu():
    raw = json.loads(load("probe-raw-idle.json"))["nvml"]
    raw["gpus"][1]["errors"] = ["nvmlDeviceGetMemoryInfo: NVMLError_GpuIsLost: GPU is lost"]
    del raw["gpus"][1]["memory"]
    nvidia = parse_nvml(raw)
    assert nvidia.gpus[0].errors == ()
    assert nvidia.gpus[1].errors == ("nvmlDeviceGetMemoryInfo: NVMLError_GpuIsLost: GPU is lost",)


@pytest.mark.parametrize("value,text", [(13000, "13.0"), (12040, "12.4"), (12080, "12.8"), (None, None)])
def test_cuda_driver_version_text(value, text):
    assert cuda_version_text(value) == text


def test_pcie_only_gpus_use_the_common_ancestor_label():
    gpu = {"index": 0, "name": "NVIDIA L4", "memory": {"total": 1, "free": 1, "used": 0}, "cc": [8, 9],
           "nvlink": []}
    raw = {"gpus": [gpu, dict(gpu, index=1)], "topology": [[None, 40], [40, None]],
           "p2p_read": [[None, 2], [2, None]]}
    assert [(l.kind, l.p2p_read) for l in parse_nvml(raw).links] == [("NODE", False)]


def test_docker_facts_see_runtime_and_toolkit():
    docker = parse_docker({"present": True, "version": "27.3.1", "runtimes": ["io.containerd.runc.v2", "nvidia", "runc"],
                           "toolkit": ["nvidia-container-runtime-hook"]})
    assert (docker.version, docker.nvidia_runtime, docker.nvidia_container_toolkit) == ("27.3.1", True, True)
    assert parse_docker({"present": False}).nvidia_container_toolkit is False


@pytest.mark.parametrize("text", ["", "Traceback (most recent call last):\n  boom", "[1, 2]"])
def test_unreadable_output_is_a_clear_error(text):
    with pytest.raises(ProbeOutputError):
        parse_probe_output(text)


def test_real_json_output_validates_against_the_documented_schema():
    report = json.loads(load("probe-local-idle.json"))
    jsonschema.validate(report, probe_report_schema())
    parsed = report_from_json(report)
    assert parsed.hosts[0].facts.nvidia.gpus[1].name == "NVIDIA H200"
    assert report_to_json(parsed) == report  # read back and written again: the same JSON


def test_documented_schema_file_is_current():
    from tests.support.paths import REPO

    documented = json.loads((REPO / "docs" / "probe-schema.json").read_text())
    assert documented == probe_report_schema(), "run: python -m tritonops.facts.schema > docs/probe-schema.json"


def test_schema_rejects_a_report_with_a_missing_field():
    report = json.loads(load("probe-local-idle.json"))
    del report["hosts"][0]["facts"]["nvidia"]["gpus"][0]["memory_total_bytes"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, probe_report_schema())


def test_real_single_h200_output_of_this_probe_program_parses_and_matches_nvidia_smi():
    """tests/fixtures/real/h200x1-probe: the current bundle run on a lent H200 (its README has the command)."""
    folder = FIXTURES / "real" / "h200x1-probe"
    facts = parse_probe_output((folder / "probe-raw.json").read_text())
    smi = (folder / "nvidia-smi.txt").read_text()
    (gpu,) = facts.nvidia.gpus
    assert gpu.name == "NVIDIA H200" and gpu.name in smi
    assert f"{gpu.memory_total_bytes // 2**20}MiB" in smi  # 143771MiB
    assert gpu.cuda_total_bytes == H200_CUDA_TOTAL  # the same as the 2-GPU machine's torch figure
    assert gpu.persistence_mode is True and gpu.mig_enabled is False and gpu.compute_capability == (9, 0)
    assert facts.nvidia.driver_version == "580.159.04" and "Driver Version: 580.159.04" in smi
    assert facts.nvidia.links == () and facts.nvidia.error is None
    assert facts.docker.present is False
