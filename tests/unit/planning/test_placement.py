"""Placement (tritonops/planning/placement.py) as pure code: replicas on the real H200 pair's topology (its
probe and its `nvidia-smi topo -m`, tests/fixtures/real/h200x2), on the lab's NVLink hosts, and on
hand-written PCIe-only and two-socket matrices; what is left out and why; bad input as one line."""

from __future__ import annotations

import json
from itertools import combinations

import pytest

from tests.support.paths import FIXTURES
from tritonops.facts.model import report_from_json
from tritonops.lab.profiles import PROFILES
from tritonops.planning.placement import (GpuTopology, ModelDemand, PlacementError, Replica, ReplicaPorts,
                                          best_group, link_rank, place, with_ports)
from tritonops.values.containers import container_name

REAL = FIXTURES / "real/h200x2"


def _real_pair() -> GpuTopology:
    facts = report_from_json(json.loads((REAL / "probe-local-idle.json").read_text())).hosts[0].facts
    return GpuTopology.from_facts(facts.nvidia)


def _topo_matrix(text: str) -> dict:
    """The GPU x GPU cells of `nvidia-smi topo -m` text."""
    rows = [line.split("\t") for line in text.splitlines() if line.startswith("GPU")]
    cells = {}
    for i, row in enumerate(rows):
        for j, cell in enumerate(row[1:1 + len(rows)]):
            if i != j:
                cells[frozenset((i, j))] = cell.strip()
    return cells


def _lab(profile: str) -> GpuTopology:
    p = PROFILES[profile]
    return GpuTopology.uniform(p.count, f"NV{p.card.nvlinks}")  # the lab's NVML: every pair NVLinked


def _two_sockets() -> GpuTopology:
    """8 PCIe GPUs, two per switch, two switches per socket: PIX in a pair, NODE across a socket, SYS across."""
    links = {}
    for a, b in combinations(range(8), 2):
        links[frozenset((a, b))] = "PIX" if a // 2 == b // 2 else "NODE" if a // 4 == b // 4 else "SYS"
    return GpuTopology(tuple(range(8)), links)


def test_the_real_h200_pair_reads_the_same_links_as_its_topo_matrix():
    topology = _real_pair()
    assert topology.gpus == (0, 1)
    assert dict(topology.links) == _topo_matrix((REAL / "topo.txt").read_text()) == {frozenset((0, 1)): "NV18"}


def test_on_the_real_h200_pair_tp1_serves_on_both_gpus_and_tp2_pairs_them_over_nvlink():
    topology = _real_pair()
    assert place(topology, [ModelDemand("qwen7b", 1)]).replicas == (Replica("qwen7b", 0, (0,)),
                                                                     Replica("qwen7b", 1, (1,)))
    two = place(topology, [ModelDemand("llama70b", 2)])
    assert two.replicas == (Replica("llama70b", 0, (0, 1), "NV18"),) and two.reasons == () and two.idle == ()


def test_every_gpu_of_the_lab_hosts_serves():
    h200 = place(_lab("h200x8"), [ModelDemand("tiny", 2)])
    assert [r.gpus for r in h200.replicas] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert {r.link for r in h200.replicas} == {"NV18"} and h200.idle == ()
    a100 = place(_lab("a100x4"), [ModelDemand("tiny", 1)])
    assert [r.gpus for r in a100.replicas] == [(0,), (1,), (2,), (3,)] and [r.index for r in a100.replicas] == [0, 1, 2, 3]


def test_pcie_pairs_stay_on_their_switch_and_a_group_that_must_cross_sockets_says_so():
    topology = _two_sockets()
    pairs = place(topology, [ModelDemand("m", 2)])
    assert [r.gpus for r in pairs.replicas] == [(0, 1), (2, 3), (4, 5), (6, 7)] and pairs.reasons == ()
    fours = place(topology, [ModelDemand("m", 4)])
    assert [(r.gpus, r.link) for r in fours.replicas] == [((0, 1, 2, 3), "NODE"), ((4, 5, 6, 7), "NODE")]
    assert all("NODE" in reason for reason in fours.reasons) and len(fours.reasons) == 2
    eight = place(topology, [ModelDemand("m", 8)])
    assert eight.replicas[0].link == "SYS" and "between NUMA nodes" in eight.reasons[0]


def test_with_gpus_taken_by_another_process_the_groups_still_prefer_the_fast_links():
    topology = _two_sockets()
    result = place(topology, [ModelDemand("m", 2)], busy={1: "pid 4242 holds 20.0 GiB"})
    assert [r.gpus for r in result.replicas] == [(2, 3), (4, 5), (6, 7)]  # 0 alone has no PIX partner left
    assert result.left_out == ((1, "pid 4242 holds 20.0 GiB"),) and result.idle == (0,)
    assert result.reasons == ("GPU 1 left out: pid 4242 holds 20.0 GiB", "GPU 0 serve nothing: no replica fits there")


def test_several_models_get_disjoint_gpus_numbered_first_then_as_many_as_fit_in_turn():
    result = place(_lab("h200x8"), [ModelDemand("small", 1), ModelDemand("big", 2, replicas=2)])
    big, small = result.of("big"), result.of("small")
    assert [r.gpus for r in big] == [(0, 1), (2, 3)] and [r.gpus for r in small] == [(4,), (5,), (6,), (7,)]
    taken = [g for r in result.replicas for g in r.gpus]
    assert len(taken) == len(set(taken)) == 8
    turns = place(_lab("h200x8"), [ModelDemand("a", 2), ModelDemand("b", 1)])
    # in turn a, b, a, b, a: each takes its fastest group of what is left
    assert [(r.model, r.gpus) for r in turns.replicas] == [("a", (0, 1)), ("b", (2,)), ("a", (3, 4)), ("b", (5,)),
                                                           ("a", (6, 7))]


def test_the_same_inputs_give_the_same_placement_and_tritonops_gpus_restricts_it():
    demands = [ModelDemand("m", 2)]
    assert place(_two_sockets(), demands, allowed=[6, 7, 4, 5]) == place(_two_sockets(), demands, allowed=[4, 5, 6, 7])
    assert [r.gpus for r in place(_two_sockets(), demands, allowed=[4, 5, 6, 7]).replicas] == [(4, 5), (6, 7)]


@pytest.mark.parametrize("demands, kwargs, message", [
    ([ModelDemand("m", 2, replicas=5)], {}, "m 5 x TP 2 need 10 GPUs; 8 usable (0,1,2,3,4,5,6,7)"),
    ([ModelDemand("m", 2)], {"allowed": [0, 1, 2]}, "model m: tensor parallel size 2 does not divide the 3 GPUs "
                                                    "given (0,1,2)"),
    ([ModelDemand("m", 1)], {"allowed": [0, 9]}, "tritonops_gpus names GPU 9, which the host does not have (it has "
                                                 "0,1,2,3,4,5,6,7)"),
    ([ModelDemand("m", 1)], {"allowed": [0, 1], "busy": {0: "pid 1", 1: "pid 2"}},
     "every GPU this deployment may use is busy (GPU 0: pid 1; GPU 1: pid 2)"),
    ([ModelDemand("m", 1, replicas=0)], {}, "model m: tritonops_replicas 0 is not a whole number >= 1"),
    ([ModelDemand("m", 16)], {}, "model m: no 16 free GPUs left (usable: 0,1,2,3,4,5,6,7)"),
    ([ModelDemand("a", 2, replicas=4), ModelDemand("b", 1)], {},
     "model b: no 1 free GPUs left (usable: 0,1,2,3,4,5,6,7, the rest taken by the other models)"),
])
def test_bad_input_is_one_line_naming_what_is_wrong(demands, kwargs, message):
    with pytest.raises(PlacementError) as caught:
        place(_two_sockets(), demands, **kwargs)
    assert str(caught.value) == message and "\n" not in str(caught.value)


def test_links_rank_nvlink_by_its_bonds_then_pcie_from_near_to_far():
    kinds = ["SYS", "PIX", "NV4", "?", "NODE", "NV18", "PHB", "PXB"]
    assert sorted(kinds, key=link_rank) == ["NV18", "NV4", "PIX", "PXB", "PHB", "NODE", "SYS", "?"]
    assert best_group(_two_sockets(), [0, 2, 3, 5], 2) == (2, 3)
    assert best_group(_two_sockets(), [0, 4], 2) == (0, 4) and best_group(_two_sockets(), [0], 2) is None


def test_each_replica_gets_its_ports_from_the_base_and_a_stride_and_a_container_of_its_own():
    placed = with_ports(place(_lab("h200x8"), [ModelDemand("chat", 2)]), ReplicaPorts(8000, 8001, 8002), 10)
    assert [(r.name, r.ports.all()) for r in placed.replicas] == [
        ("chat-0", (8000, 8001, 8002)), ("chat-1", (8010, 8011, 8012)), ("chat-2", (8020, 8021, 8022)),
        ("chat-3", (8030, 8031, 8032))]
    assert [container_name("prod", r.name) for r in placed.replicas][:2] == ["tritonops-prod-chat-0",
                                                                            "tritonops-prod-chat-1"]
    assert container_name("prod") == "tritonops-prod"  # one container per deployment, as before replicas


@pytest.mark.parametrize("base, stride, taken, message", [
    (ReplicaPorts(8000, 8001, 8002), 2, (), "replicas chat-0 and chat-1 would both use port 8002: make "
                                            "tritonops_port_stride at least 3 (it is 2)"),
    (ReplicaPorts(65500, 65501, 65502), 20, (), "replica chat-2: port 65540 (base (65500, 65501, 65502) + 20 x 2) "
                                                "is outside 1-65535"),
    (ReplicaPorts(8000, 8001, 8002), 10, (8011,), "replica chat-1: port 8011 is in use on the host"),
    (ReplicaPorts(8000, 8001, 8002), 0, (), "tritonops_port_stride 0 is not a whole number >= 1"),
])
def test_ports_that_clash_are_one_line_before_anything_starts(base, stride, taken, message):
    placement = place(_lab("h200x8"), [ModelDemand("chat", 2)])
    with pytest.raises(PlacementError) as caught:
        with_ports(placement, base, stride, taken)
    assert str(caught.value) == message
