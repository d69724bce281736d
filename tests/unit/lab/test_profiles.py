"""GPU profiles and the profile file the lab's libnvidia-ml.so.1 reads (no Docker)."""

import json
import types

import pytest

from tests.support.paths import FIXTURES
from tritonops.lab.image_specs import asset_text
from tritonops.lab.profile_file import GpuFaults, SimulatedProcess, gpu_uuid, parse_profile, render_profile
from tritonops.lab.profiles import PROFILES, get_profile
from tritonops.errors import InputError

H200_FIXTURE = FIXTURES / "nvml" / "nvml-h200x2.json"  # copied from ../shared/fixtures/nvml


def test_h200_profile_matches_the_captured_h200():
    real = json.loads(H200_FIXTURE.read_text())
    values = parse_profile(render_profile(PROFILES["h200x2"], "node"))
    assert (values["driver"], values["nvml"], int(values["cuda_driver"])) == (real["driver"], real["nvml"], real["cuda_driver"])
    assert int(values["gpu_count"]) == len(real["gpus"])
    for gpu in real["gpus"]:
        g = f"gpu.{gpu['index']}."
        total, reserved = int(values[g + "memory_total"]), int(values[g + "memory_reserved"])
        assert values[g + "name"] == gpu["name"]
        assert values[g + "pci_bus_id"] == gpu["pci_bus_id"]
        assert total == gpu["memory"]["total"] == gpu["memory_v2"]["total"]
        assert reserved == gpu["memory_v2"]["reserved"] == gpu["memory"]["used"]  # v1 used = reserved
        assert total - reserved == gpu["memory"]["free"] == gpu["memory_v2"]["free"]
        assert [int(x) for x in values[g + "cc"].split(".")] == gpu["cc"]
        assert int(values[g + "nvlinks"]) == sum(gpu["nvlink"]) == len(gpu["nvlink"])
        assert int(values[g + "bar1_total"]) == gpu["bar1"]
        assert int(values[g + "power_limit_mw"]) == gpu["power_limit_mw"]
        assert int(values[g + "mig"]) == gpu["mig_mode"][0]
        assert int(values[g + "persistence"]) == gpu["persistence"]
    assert int(values["topology"]) == real["topology"][0][1] == real["topology"][1][0]


def test_every_profile_renders_and_only_nogpu_has_no_file():
    for name, profile in PROFILES.items():
        text = render_profile(profile, "h")
        if name == "nogpu":
            assert text is None
            continue
        values = parse_profile(text)
        assert int(values["gpu_count"]) == profile.count
        assert all(f"gpu.{i}.name" in values for i in range(profile.count))


def test_profile_numbers_of_the_default_hosts():
    assert (PROFILES["2080ti"].count, PROFILES["2080ti"].card.memory_total, PROFILES["2080ti"].card.cc,
            PROFILES["2080ti"].card.nvlinks) == (1, 11264 << 20, (7, 5), 0)
    assert (PROFILES["a100x4"].count, PROFILES["a100x4"].card.name, PROFILES["a100x4"].card.memory_total,
            PROFILES["a100x4"].card.nvlinks) == (4, "NVIDIA A100-SXM4-80GB", 81920 << 20, 12)
    assert (PROFILES["h200x8"].count, PROFILES["h200x8"].card.nvlinks) == (8, 18)


def test_gpu_uuids_differ_per_host_and_index_but_are_stable():
    assert gpu_uuid("a", "h200x8", 0) == gpu_uuid("a", "h200x8", 0)
    assert len({gpu_uuid(h, "h200x8", i) for h in "ab" for i in range(8)}) == 16


def test_faults_and_processes_are_rendered_per_gpu():
    faults = GpuFaults(init_fail=0, gpu_fail=((1, "nvmlDeviceGetMemoryInfo", 15),),
                       processes=((0, SimulatedProcess(42, 1 << 30)), (0, SimulatedProcess(43, 5))),
                       system_fail=(("nvmlSystemGetDriverVersion", 3),))
    values = parse_profile(render_profile(PROFILES["h200x2"], "h", faults))
    assert values["gpu.1.fail"] == "nvmlDeviceGetMemoryInfo:15"
    assert values["gpu.0.processes"] == f"42:{1 << 30},43:5"
    assert values["fail"] == "nvmlSystemGetDriverVersion:3"
    assert "gpu.0.fail" not in values and "init_fail" not in values
    assert parse_profile(render_profile(PROFILES["t4"], "h", GpuFaults(init_fail=9)))["init_fail"] == "9"


def test_unknown_profile_is_an_input_error():
    with pytest.raises(InputError, match="unknown GPU profile 'v100'"):
        get_profile("v100")


def _hook_module():
    module = types.ModuleType("hook")
    exec(asset_text("nvidia-container-runtime-hook.py.txt"), module.__dict__)
    return module


def test_gpu_hook_limits_the_profile_to_the_visible_gpus():
    hook = _hook_module()
    text = render_profile(PROFILES["h200x8"], "h", GpuFaults(gpu_fail=((5, "nvmlDeviceGetName", 15),)))
    assert hook.visible(["NVIDIA_VISIBLE_DEVICES=all"], 8) == list(range(8))
    assert hook.visible(["NVIDIA_VISIBLE_DEVICES=2,5"], 8) == [2, 5]
    assert hook.visible([], 8) == []
    values = parse_profile(hook.filtered_profile(text, [2, 5]))
    original = parse_profile(text)
    assert values["gpu_count"] == "2"
    assert values["gpu.0.uuid"] == original["gpu.2.uuid"] and values["gpu.1.uuid"] == original["gpu.5.uuid"]
    assert values["gpu.1.fail"] == "nvmlDeviceGetName:15"
    assert "gpu.2.name" not in values
