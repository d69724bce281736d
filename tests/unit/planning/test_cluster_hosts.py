"""plan_hosts with `tritonops_cluster`: the hosts of a group run one model as a pipeline across them."""

import json

from tests.support.facts import host_facts
from tests.support.planning import cluster_inventory
from tritonops.planning import load_models_for, plan_hosts
from tritonops.sizing.engine_plan import SizingRequest


def plans(hosts, facts=None, **kw):
    models, errors = load_models_for(hosts, None)
    facts = facts if facts is not None else {h.name: host_facts(1) for h in hosts}
    return {p.host: p for p in plan_hosts(hosts, facts, SizingRequest(), models, errors, **kw)}


def test_the_fewest_hosts_that_hold_the_model_form_the_cluster_head_first(tmp_path):
    found = plans(cluster_inventory(tmp_path))
    g1, g2, g3 = found["g1"], found["g2"], found["g3"]
    assert g1.ok and g2.ok, (g1.errors, g2.errors)
    assert g1.cluster == g2.cluster and g1.cluster.pipeline_parallel_size == 2
    assert (g1.cluster.head.host, [w.host for w in g1.cluster.workers]) == ("g1", ["g2"])
    assert [m.address for m in g1.cluster.members] == ["10.0.0.1", "10.0.0.2"]
    args = json.loads(g1.files["vllm_model/1/model.json"])
    assert (args["pipeline_parallel_size"], args["distributed_executor_backend"], args["tensor_parallel_size"]) == \
        (2, "ray", 1)
    assert not g3.ok and g3.files == {} and g3.cluster is None
    assert g3.error == ("spare: cluster big runs on 2 hosts (tritonops_pipeline_parallel_size 2); g3 is not needed")
    # a host outside the cluster is planned as ever
    assert found["solo"].ok and found["solo"].cluster is None
    assert "pipeline_parallel_size" not in json.loads(found["solo"].files["vllm_model/1/model.json"])


def test_a_given_pipeline_size_takes_that_many_hosts(tmp_path):
    found = plans(cluster_inventory(tmp_path, group_vars="        tritonops_pipeline_parallel_size: 3\n"))
    assert all(found[h].ok for h in ("g1", "g2", "g3"))
    assert [(m.host, m.layers) for m in found["g3"].cluster.members] == [("g1", 27), ("g2", 27), ("g3", 26)]


def test_a_member_with_other_gpus_fails_the_whole_cluster_and_nothing_else(tmp_path):
    hosts = cluster_inventory(tmp_path)
    facts = {h.name: host_facts(2 if h.name == "g2" else 1) for h in hosts}
    found = plans(hosts, facts)
    for name in ("g1", "g2", "g3"):
        assert not found[name].ok and found[name].files == {}
        assert found[name].error.startswith("cluster big: g2 has 2 x NVIDIA H200, the head g1 1 x NVIDIA H200")
    assert found["solo"].ok


def test_an_unreachable_member_fails_the_cluster(tmp_path):
    hosts = cluster_inventory(tmp_path)
    facts = {h.name: host_facts(1) for h in hosts if h.name != "g2"}
    found = plans(hosts, facts, why_no_facts={"g2": "unreachable: connection refused"})
    assert {found[n].error for n in ("g1", "g2", "g3")} == \
        {"cluster big: g2 has no facts (unreachable: connection refused): the cluster needs every member"}
    assert found["solo"].ok


def test_a_member_needs_an_address_the_others_reach(tmp_path):
    hosts = cluster_inventory(tmp_path, host_vars={"g2": "          ansible_host: gpu-2.lan\n"})
    found = plans(hosts)
    assert found["g1"].error == ("cluster big: g2: set tritonops_node_address to the IP address the other members "
                                 "reach it at (ansible_host 'gpu-2.lan' is not one)")
    named = plans(cluster_inventory(tmp_path, host_vars={"g2": "          ansible_host: gpu-2.lan\n"
                                                       "          tritonops_node_address: 10.0.1.2\n"}))
    assert named["g2"].ok and named["g2"].cluster.member("g2").address == "10.0.1.2"


def test_a_pipeline_of_one_host_or_too_many_is_refused_at_its_line(tmp_path):
    found = plans(cluster_inventory(tmp_path, group_vars="        tritonops_pipeline_parallel_size: 4\n"))
    assert found["g1"].error == "cluster big: pipeline_parallel_size 4 needs 4 hosts; the group has 3 (g1, g2, g3)"
    bad = plans(cluster_inventory(tmp_path, group_vars="        tritonops_pipeline_parallel_size: two\n"))
    assert "hosts.yml:" in bad["g1"].error and "tritonops_pipeline_parallel_size" in bad["g1"].error


def test_a_model_no_pipeline_of_the_group_holds_says_so(tmp_path):
    hosts = cluster_inventory(tmp_path, group_vars="        tritonops_max_model_len: 999999\n")
    found = plans(hosts)
    assert not found["g1"].ok and found["g1"].error.startswith("cluster big: does not fit on 3 hosts: ")


def test_plan_shows_the_cluster_in_its_table_and_json(tmp_path, capsys):
    from tritonops.cli.main import main
    from tritonops.facts.model import HostProbe, ProbeReport, report_to_json

    hosts = cluster_inventory(tmp_path, group_vars="        tritonops_pipeline_parallel_size: 2\n")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(report_to_json(ProbeReport(hosts=tuple(
        HostProbe(host=h.name, status="ok", facts=host_facts(1)) for h in hosts if h.name != "g3")))))
    code = main(["plan", "-i", str(tmp_path / "hosts.yml"), "--facts", str(facts), "--limit", "g1,g2", "--json"])
    rows = {row["host"]: row["payload"] for row in json.loads(capsys.readouterr().out)["results"]}
    assert code == 0 and rows["g1"]["cluster"] == rows["g2"]["cluster"]
    assert (rows["g1"]["cluster"]["head"], rows["g1"]["cluster"]["workers"]) == ("g1", ["g2"])
    assert main(["plan", "-i", str(tmp_path / "hosts.yml"), "--facts", str(facts), "--limit", "g1,g2"]) == 0
    text = capsys.readouterr().out
    assert "cluster: big (Ray, pipeline_parallel_size 2, tensor_parallel_size 1 on each): this host is the head" \
        in " ".join(text.split())


def test_a_cluster_in_the_openai_mode_or_with_a_tiny_object_store_is_refused_for_every_member(tmp_path):
    found = plans(cluster_inventory(tmp_path, group_vars="        tritonops_frontend: openai\n"))
    for name in ("g1", "g2"):
        assert not found[name].ok and found[name].files == {}
        assert found[name].error == ("cluster big: the openai serving mode does not run a pipeline across hosts "
                                     "yet (Triton's KServe endpoints do)")
    found = plans(cluster_inventory(tmp_path, group_vars="        tritonops_ray_object_store_bytes: 1000\n"))
    assert not found["g1"].ok and "tritonops_ray_object_store_bytes must be a whole number of bytes of at least " \
                                  "78643200 (75 MiB), not 1000" in found["g1"].error
