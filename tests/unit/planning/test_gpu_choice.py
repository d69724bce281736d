"""Which GPUs a host's Triton containers serve on (tritonops/planning/gpu_choice.py, issue #22): tritonops_gpus,
tritonops_replicas and the port stride as written in an inventory, the groups chosen by the probe's topology
(the real H200 pair, a hand-written two-socket PCIe host), sizing counting only the allowed GPUs, each
replica's ports, and bad input as one line."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import combinations

import pytest

from tests.support.facts import host_facts
from tests.support.paths import FIXTURES
from tests.support.planning import plan
from tritonops.errors import InputError
from tritonops.facts.model import GpuLink, report_from_json
from tritonops.planning.gpu_choice import allowed_gpus, describe, place_replicas, replica_count, restrict_facts
from tritonops.planning.placement import PlacementError, ReplicaPorts, Slot

PORTS = ReplicaPorts(8000, 8001, 8002)


def choose(facts, size, allowed, replicas=1):
    return place_replicas(facts, size, allowed, replicas, PORTS, 10)

REAL_PAIR = FIXTURES / "real/h200x2/probe-local-idle.json"


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
    (pair,) = choose(facts, 2, None).replicas
    assert (pair.gpus, pair.link, pair.ports) == ((0, 1), "NV18", PORTS)
    assert [r.gpus for r in choose(facts, 1, None).replicas] == [(0,)]
    assert [r.gpus for r in choose(facts, 1, (1,)).replicas] == [(1,)]
    both = choose(facts, 1, None, replicas=None)  # auto: every GPU serves
    assert [(r.index, r.gpus, r.ports.all()) for r in both.replicas] == [(0, (0,), (8000, 8001, 8002)),
                                                                        (1, (1,), (8010, 8011, 8012))]
    assert describe(both.replicas[1]) == "replica 1: GPU 1, ports 8010/8011/8012"


def test_tp2_stays_on_a_pcie_switch_and_a_group_forced_across_sockets_says_so():
    facts = _two_sockets()
    assert [r.gpus for r in choose(facts, 2, (0, 2, 3)).replicas] == [(2, 3)]  # PIX, not 0+2 across switches
    crossed = choose(facts, 2, (1, 6))
    assert [(r.gpus, r.link) for r in crossed.replicas] == [((1, 6), "SYS")]
    assert crossed.reasons == ("replica 0: GPUs 1,6 have no faster link than SYS (between NUMA nodes (the "
                               "CPUs' interconnect)): tensor-parallel traffic is slow there",)
    four = choose(facts, 4, None, replicas=2)
    assert [(r.gpus, r.link) for r in four.replicas] == [((0, 1, 2, 3), "NODE"), ((4, 5, 6, 7), "NODE")]
    one = choose(facts, 2, None)
    assert one.idle == (2, 3, 4, 5, 6, 7)  # the count asked for: shown by plan, not as idle GPUs
    # the idle GPUs hold the replica's standby slot: the best-linked pair among them, at the ports of replica 1
    assert one.replicas[0].standby == Slot((2, 3), ReplicaPorts(8010, 8011, 8012))
    assert one.reasons == ("spare GPU 2,3: a replica's new release boots there and passes its gate before the old "
                           "one stops (tritonops_boot_first)",)
    assert place_replicas(facts, 2, None, 1, PORTS, 10, boot_first=False).replicas[0].standby is None
    shared = choose(facts, 1, None, replicas=6)  # two GPUs left for six replicas: they take them in turn
    assert [(r.gpus, r.standby.gpus, r.standby.ports.http) for r in shared.replicas] == [
        ((0,), (6,), 8060), ((1,), (7,), 8070), ((2,), (6,), 8080), ((3,), (7,), 8090), ((4,), (6,), 8100),
        ((5,), (7,), 8110)]
    assert [r.standby for r in choose(facts, 2, (0, 1, 2, 3, 4, 5, 6), replicas=3).replicas] == [None] * 3  # GPU 6
    odd = choose(facts, 3, None, replicas=None)
    assert [r.gpus for r in odd.replicas] == [(0, 1, 2), (4, 5, 6)] and odd.idle == (3, 7)
    assert odd.reasons[-1] == "GPU 3,7 serve nothing: no replica fits there"


def test_a_gpu_the_host_lacks_too_few_gpus_or_ports_past_the_end_are_one_line():
    with pytest.raises(PlacementError, match=r"tritonops_gpus names GPU 9, which the host does not have \(it has 0,1\)"):
        restrict_facts(_real_pair(), (1, 9))
    with pytest.raises(PlacementError, match=r"^tritonops_replicas 1 x TP 2 need 2 GPUs; 1 usable \(1\)$"):
        choose(_real_pair(), 2, (1,))
    with pytest.raises(PlacementError, match=r"^tritonops_replicas 3 x TP 1 need 3 GPUs; 2 usable \(0,1\)$"):
        choose(_real_pair(), 1, None, replicas=3)
    with pytest.raises(PlacementError, match=r"replica triton-1: port 65540 .* is outside 1-65535"):
        place_replicas(_real_pair(), 1, None, 2, ReplicaPorts(65530, 65531, 65532), 10)


@pytest.mark.parametrize("value, count", [(None, 1), ("", 1), (3, 3), ("2", 2), ("auto", None), ("AUTO", None)])
def test_tritonops_replicas_is_a_whole_number_or_auto(value, count):
    assert replica_count(value, "h:1") == count


@pytest.mark.parametrize("value", [0, "0", -1, "many", True, 1.5, [2]])
def test_a_bad_tritonops_replicas_is_one_line_at_its_place(value):
    with pytest.raises(InputError, match=r"^h:1: tritonops_replicas .* is not a whole number >= 1 or 'auto'$"):
        replica_count(value, "h:1")


def test_restricted_facts_keep_only_the_allowed_gpus_and_their_links():
    facts = restrict_facts(_two_sockets(), (2, 3, 6))
    assert [g.index for g in facts.nvidia.gpus] == [2, 3, 6]
    assert sorted((link.a, link.b) for link in facts.nvidia.links) == [(2, 3), (2, 6), (3, 6)]


def test_the_plan_serves_on_the_allowed_gpus_and_sizes_for_their_count(tmp_path):
    facts = {"h1": _two_sockets()}
    gpus = lambda hp: [r.gpus for r in hp.placement.replicas]  # noqa: E731
    whole = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n", facts=facts)
    assert whole.ok and gpus(whole) == [(0,)]
    given = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_gpus: '5-6'\n",
                 facts=facts)
    assert given.ok and gpus(given) == [(5,)]
    tp2 = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_tensor_parallel_size: 2\n"
                         "      tritonops_gpus: [1, 2, 3]\n", facts=facts)
    assert tp2.ok and gpus(tp2) == [(2, 3)] and tp2.models[0].plan.tensor_parallel_size == 2
    every = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_replicas: auto\n"
                           "      tritonops_http_port: 9000\n      tritonops_port_stride: 5\n", facts=facts)
    assert every.ok and gpus(every) == [(g,) for g in range(8)]
    assert [r.ports.http for r in every.placement.replicas] == [9000 + 5 * i for i in range(8)]
    too_many = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_tensor_parallel_size: 4\n"
                              "      tritonops_gpus: [1, 2]\n", facts=facts)
    assert not too_many.ok and too_many.placement is None  # sizing counted the 2 GPUs allowed
    assert too_many.models[0].plan.problems == ("tensor_parallel_size 4 needs more GPUs than the 2 available",)


def test_a_bad_tritonops_gpus_in_an_inventory_is_the_hosts_error_at_its_line(tmp_path):
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_gpus: [0, 9]\n",
              facts={"h1": _real_pair()})
    assert not hp.ok and hp.error == "tritonops_gpus names GPU 9, which the host does not have (it has 0,1)"
    hp = plan(tmp_path, "      tritonops_model: Qwen/Qwen2.5-7B-Instruct\n      tritonops_gpus: '1-0'\n",
              facts={"h1": _real_pair()})
    assert not hp.ok and hp.error.startswith(f"{tmp_path / 'hosts.yml'}:6: tritonops_gpus '1-0' is not")
