"""Which GPUs a host's Triton container serves on (tritonops/planning/gpu_choice.py, issue #22): tritonops_gpus
as written in an inventory, the group chosen by the probe's topology (the real H200 pair, a hand-written
two-socket PCIe host), sizing counting only the allowed GPUs, and bad input as one line."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import pytest

from tests.test_planning_hosts import plan
from tests.test_sizing_gpu import host_facts
from tritonops.errors import InputError
from tritonops.facts.model import GpuLink, report_from_json
from tritonops.planning.gpu_choice import allowed_gpus, choose_gpus, restrict_facts
from tritonops.planning.placement import PlacementError

REAL_PAIR = Path(__file__).parent / "fixtures/real/h200x2/probe-local-idle.json"


def _real_pair():
    return report_from_json(json.loads(REAL_PAIR.read_text())).hosts[0].facts


def _two_sockets():
    """8 GPUs, two per PCIe switch (PIX), four per socket (NODE), SYS across sockets."""
    links = tuple(GpuLink(a=a, b=b, kind="PIX" if a // 2 == b // 2 else "NODE" if a // 4 == b // 4 else "SYS")
                  for a, b in combinations(range(8), 2))
    facts = host_facts(8)
    return replace(facts, nvidia=replace(facts.nvidia, links=links))


@pytest.mark.parametrize("value, gpus", [
    (None, None), ("", None), ([], None), ([3, 1], (1, 3)), ("0,2-3", (0, 2, 3)), ("5", (5,)), (2, (2,)),
    (["1", "4-5"], (1, 4, 5)),
])
def test_tritonops_gpus_reads_a_list_or_a_string_of_indices_and_ranges(value, gpus):
    assert allowed_gpus(value, "hosts.yml:4") == gpus


@pytest.mark.parametrize("value", ["a", "3-1", "0,0", [1, 1], [-1], [True], {"gpu": 1}, "1;2", "1-", 1.5, True])
def test_a_bad_tritonops_gpus_is_one_line_naming_the_variable_and_where(value):
    with pytest.raises(InputError) as err:
        allowed_gpus(value, "hosts.yml:4")
    assert str(err.value).startswith("hosts.yml:4: tritonops_gpus ") and "\n" not in str(err.value)


def test_on_the_real_h200_pair_tp2_takes_the_nvlinked_pair_and_tp1_the_lowest_allowed():
    facts = _real_pair()
    assert choose_gpus(facts, 2, None).gpus == (0, 1) and choose_gpus(facts, 2, None).link == "NV18"
    assert choose_gpus(facts, 1, None).gpus == (0,)
    assert choose_gpus(facts, 1, (1,)).gpus == (1,)


def test_tp2_stays_on_a_pcie_switch_and_a_group_forced_across_sockets_says_so():
    facts = _two_sockets()
    assert choose_gpus(facts, 2, (0, 2, 3)).gpus == (2, 3)  # PIX, not 0+2 across switches
    crossed = choose_gpus(facts, 2, (1, 6))
    assert crossed.gpus == (1, 6) and crossed.link == "SYS"
    assert crossed.reasons == ("GPU 1,6 have no faster link than SYS (between NUMA nodes (the CPUs' interconnect)): "
                               "tensor-parallel traffic is slow there",)
    four = choose_gpus(facts, 4, None)
    assert four.gpus == (0, 1, 2, 3) and four.link == "NODE"


def test_a_gpu_the_host_lacks_or_too_few_gpus_are_one_line():
    with pytest.raises(PlacementError, match=r"tritonops_gpus names GPU 9, which the host does not have \(it has 0,1\)"):
        restrict_facts(_real_pair(), (1, 9))
    with pytest.raises(PlacementError, match=r"tensor parallel size 2 needs 2 GPUs; tritonops_gpus leaves 1 \(1\)"):
        choose_gpus(_real_pair(), 2, (1,))


def test_restricted_facts_keep_only_the_allowed_gpus_and_their_links():
    facts = restrict_facts(_two_sockets(), (2, 3, 6))
    assert [g.index for g in facts.nvidia.gpus] == [2, 3, 6]
    assert sorted((link.a, link.b) for link in facts.nvidia.links) == [(2, 3), (2, 6), (3, 6)]


def test_the_plan_serves_on_the_allowed_gpus_and_sizes_for_their_count(tmp_path):
    facts = {"h1": _two_sockets()}
    whole = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n", facts=facts)
    assert whole.ok and whole.gpus.gpus == (0,)
    given = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_gpus: '5-6'\n",
                 facts=facts)
    assert given.ok and given.gpus.gpus == (5,)
    tp2 = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_tensor_parallel_size: 2\n"
                         "      tritonops_gpus: [1, 2, 3]\n", facts=facts)
    assert tp2.ok and tp2.gpus.gpus == (2, 3) and tp2.models[0].plan.tensor_parallel_size == 2
    too_many = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_tensor_parallel_size: 4\n"
                              "      tritonops_gpus: [1, 2]\n", facts=facts)
    assert not too_many.ok and too_many.gpus is None  # sizing counted the 2 GPUs allowed
    assert too_many.models[0].plan.problems == ("tensor_parallel_size 4 needs more GPUs than the 2 available",)


def test_a_bad_tritonops_gpus_in_an_inventory_is_the_hosts_error_at_its_line(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_gpus: [0, 9]\n",
              facts={"h1": _real_pair()})
    assert not hp.ok and hp.error == "tritonops_gpus names GPU 9, which the host does not have (it has 0,1)"
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_gpus: '1-0'\n",
              facts={"h1": _real_pair()})
    assert not hp.ok and hp.error.startswith(f"{tmp_path / 'hosts.yml'}:6: tritonops_gpus '1-0' is not")
