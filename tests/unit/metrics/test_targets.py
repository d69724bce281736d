"""The Prometheus file_sd targets file: one group per host, where Prometheus reaches it, and a deploy
of part of the fleet (or of another deployment sharing the file) dropping nobody."""

import json

import pytest

from tritonops.errors import InputError
from tritonops.metrics.targets import (BalancerTarget, HostTarget, merged_groups, queue_timeouts, read_targets,
                                       render_targets, scrape_address)


def target(host, deployment="prod", release="r2", address="10.0.0.1", port=8002):
    return HostTarget(host, address, port, deployment, release, ("chat", "embed"), "NVIDIA H200", 8)


def test_a_host_is_one_group_with_its_labels():
    assert target("gpu-01").group() == {
        "targets": ["10.0.0.1:8002"],
        "labels": {"host": "gpu-01", "deployment": "prod", "release": "r2", "models": "chat,embed",
                   "gpu_type": "NVIDIA H200", "gpus": "8"}}
    assert target("gpu-01", address="fd00::5", port=9102).group()["targets"] == ["[fd00::5]:9102"]


@pytest.mark.parametrize("override, bind, ssh, expected", [
    (None, "0.0.0.0", "10.0.0.1", "10.0.0.1"),        # bound everywhere: where SSH goes (ansible_host)
    (None, "", "10.0.0.1", "10.0.0.1"),
    (None, "::", "10.0.0.1", "10.0.0.1"),
    (None, "192.168.5.1", "10.0.0.1", "192.168.5.1"),  # bound to one address: only that one answers
    ("172.19.0.2", "192.168.5.1", "10.0.0.1", "172.19.0.2"),  # tritonops_metrics_address wins
    (None, "0.0.0.0", "", "gpu-01"),                   # nothing else: the inventory name
])
def test_the_scrape_address(override, bind, ssh, expected):
    assert scrape_address("gpu-01", ssh, bind, override) == expected


def test_a_scrape_address_that_could_break_the_file_is_refused_naming_where():
    with pytest.raises(InputError, match=r"^hosts.yml:4: host address 'a b'"):
        scrape_address("gpu-01", "10.0.0.1", "0.0.0.0", "a b", "hosts.yml:4")


def test_a_partial_deploy_replaces_its_hosts_and_keeps_the_rest():
    earlier = [target("gpu-01", release="r1").group(), target("gpu-02", release="r1").group(),
               target("gpu-01", deployment="staging", release="s1").group()]
    groups = merged_groups(earlier, [("prod", "gpu-01")], [target("gpu-01", release="r2")])
    assert [(g["labels"]["deployment"], g["labels"]["host"], g["labels"]["release"]) for g in groups] == [
        ("prod", "gpu-01", "r2"), ("prod", "gpu-02", "r1"), ("staging", "gpu-01", "s1")]


def test_a_host_that_serves_nothing_any_more_leaves_the_file():
    earlier = [target("gpu-01").group(), target("gpu-02").group()]
    assert merged_groups(earlier, [("prod", "gpu-02")], []) == [target("gpu-01").group()]


def test_rendering_is_stable_and_read_back_equal():
    groups = merged_groups([], [], [target("gpu-02"), target("gpu-01")])
    text = render_targets(groups)
    assert text == render_targets(merged_groups(read_targets(text, "t.json"), [], []))
    assert [g["labels"]["host"] for g in json.loads(text)] == ["gpu-01", "gpu-02"]
    assert read_targets("", "t.json") == []


@pytest.mark.parametrize("text, why", [
    ("{not json", r"^/p/t.json: not a Prometheus file_sd JSON file \(line 1"),
    ('{"targets": []}', r"^/p/t.json: a file_sd file holds a JSON list"),
    ('[{"targets": ["a:1"]}, {"targets": "a:1"}]', r"^/p/t.json: target group 2 is not"),
    ('[{"targets": ["a:1"], "labels": {"gpus": 8}}]', r"^/p/t.json: target group 1 is not"),
])
def test_a_targets_file_that_is_not_file_sd_is_an_error_naming_it(text, why):
    with pytest.raises(InputError, match=why):
        read_targets(text, "/p/t.json")


def test_a_host_with_replicas_is_one_group_with_a_target_per_replica():
    group = HostTarget("gpu-01", "10.0.0.5", 8002, "prod", "r1", ("chat",), "NVIDIA H200", 8, (8012, 8022)).group()
    assert group["targets"] == ["10.0.0.5:8002", "10.0.0.5:8012", "10.0.0.5:8022"]
    assert group["labels"]["host"] == "gpu-01"


def test_a_balancer_is_one_group_for_its_exporter_labelled_as_a_balancer_of_its_deployments():
    assert BalancerTarget("door-1", "10.0.0.2", 8405, ("chat",), 2000).group() == {
        "targets": ["10.0.0.2:8405"],
        "labels": {"host": "door-1", "role": "balancer", "deployment": "chat", "queue_timeout_ms": "2000"}}
    assert BalancerTarget("door-1", "fd00::2", 8405, ("chat", "embed"), 500).group()["labels"]["deployment"] == \
        "chat,embed"  # scraped once, whatever the number of doors it holds


def test_a_balancer_s_group_is_replaced_by_its_host_whatever_deployments_it_listed_before():
    earlier = [target("gpu-01").group(), BalancerTarget("door-1", "10.0.0.2", 8405, ("prod",), 2000).group(),
               BalancerTarget("door-2", "10.0.0.3", 8405, ("prod",), 2000).group()]
    now = BalancerTarget("door-1", "10.0.0.2", 8405, ("prod", "staging"), 500)
    groups = merged_groups(earlier, [], [now], ["door-1"])
    assert groups == [BalancerTarget("door-2", "10.0.0.3", 8405, ("prod",), 2000).group(), target("gpu-01").group(),
                      now.group()]  # by deployment label, then host
    # a Triton host named like a balancer is not a balancer's group: kept
    assert merged_groups([target("door-1").group()], [], [], ["door-1"]) == [target("door-1").group()]
    assert queue_timeouts(groups) == (500, 2000)
    assert queue_timeouts([target("gpu-01").group()]) == ()
