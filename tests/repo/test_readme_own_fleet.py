"""README's "From the lab to your own fleet" (issue #45 item 8) is checked against the code it describes: its
inventory is read from ./inventory when -i is absent, its commands and options parse, the variables it names are
ones tritonops knows, and the preflight it promises refuses what it says."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.support.paths import REPO
from tritonops.cli.main import build_parser, main
from tritonops.facts.model import DockerFacts, GpuFacts, HostFacts, NvidiaFacts, SystemFacts
from tritonops.image import ngc
from tritonops.image.preflight import EngineFacts, ImageNeeds, check
from tritonops.inventory.known_vars import KNOWN_VARS

README = REPO / "README.md"
TITLE = "## From the lab to your own fleet"


def section() -> str:
    text = README.read_text(encoding="utf-8")
    assert TITLE in text, "README has no section for going from the lab to your own fleet"
    rest = text.split(TITLE, 1)[1]
    return rest.split("\n## ", 1)[0]


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", section(), flags=re.S)


def commands() -> list[list[str]]:
    lines = [line.split("#", 1)[0].strip() for block in blocks("sh") for line in block.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith("tritonops ")]


def test_its_lines_stay_under_120_characters():
    assert [line for line in section().splitlines() if len(line) >= 120] == []


def test_without_i_the_commands_read_the_inventory_it_shows_from_dot_inventory(tmp_path, monkeypatch, capsys):
    (inventory,) = blocks("yaml")
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "hosts.yml").write_text(inventory)
    monkeypatch.chdir(tmp_path)
    assert main(["inventory", "--json"]) == 0
    shown = json.dumps(json.loads(capsys.readouterr().out))
    assert "gpu-01" in shown and "10.0.0.12" in shown


def test_its_steps_are_probe_plan_deploy_check_then_deploy_and_each_parses():
    steps = commands()
    assert [argv[0] for argv in steps] == ["probe", "plan", "deploy", "deploy"]
    assert "--check" in steps[2] and "--check" not in steps[3]
    for argv in steps:
        build_parser().parse_args(argv)   # an unknown option exits 2


@pytest.mark.parametrize("option", ["--ask-become-pass", "--accept-new-host-keys"])
def test_the_options_it_names_exist_on_each_step(option):
    assert option in section()
    for argv in commands():
        build_parser().parse_args([*argv, option])


def test_the_variables_it_names_are_known():
    named = set(re.findall(r"\btritonops_[a-z_]+", section())) | set(re.findall(r"\bansible_[a-z_]+", section()))
    assert named and {name for name in named if name.startswith("tritonops_")} <= set(KNOWN_VARS)


def test_the_driver_floors_it_states_are_the_default_base_and_cuda_12s():
    default = ngc.lookup(ngc.DEFAULT_BASE_RELEASE)
    assert f"`tritonserver:{ngc.DEFAULT_BASE_RELEASE}-py3`, CUDA {default.cuda_major})" in section()
    assert f"driver >= {default.min_driver[0]}" in section()
    assert f"a CUDA 12 base (`tritonops_triton_image`) >= {ngc.CUDA_MAJOR_MIN_DRIVER[12][0]}" in section()


def test_the_toolkit_command_it_gives_is_the_one_the_preflight_refuses_a_host_with():
    gpu = GpuFacts(index=0, name="NVIDIA H200", uuid="GPU-0", pci_bus_id="0", memory_total_bytes=1,
                   memory_free_bytes=1, memory_used_bytes=0, cuda_total_bytes=1, compute_capability=(9, 0))
    facts = HostFacts(
        system=SystemFacts(hostname="h", kernel="k", os="o", cpu_count=1, ram_total_bytes=1, ram_available_bytes=1,
                           python="3.11", disk_path="/", disk_free_bytes=1, disk_total_bytes=1),
        nvidia=NvidiaFacts(driver_version="580.159.04", gpus=(gpu,)),
        docker=DockerFacts(present=True, version="28.0", nvidia_container_toolkit=False))
    needs = ImageNeeds(ngc.lookup(ngc.DEFAULT_BASE_RELEASE), None)
    (refusal,) = check(facts, EngineFacts(answering=True), needs).refusals
    (command,) = re.findall(r"'(nvidia-ctk [^']+)'", refusal)
    assert f"`{command}`" in section()
