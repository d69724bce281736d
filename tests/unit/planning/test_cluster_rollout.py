"""A pipeline is deployed as one unit (planning/cluster_rollout.py): a member that leaves the run takes its cluster
out, serial may not split one, its members run one image. By equality."""

from tritonops.planning.cluster_rollout import incomplete, mixed_images, split_by_batches

CLUSTERS = {"big": ("g1", "g2", "g3"), "pair": ("p1", "p2")}


def test_a_member_that_left_the_run_takes_the_rest_of_its_cluster_out_and_no_other_host():
    assert incomplete(CLUSTERS, ["g1", "g3", "p1", "p2", "solo"], "its lock") == {
        "g1": "cluster big: g2 left the run (its lock); the cluster is deployed as one unit",
        "g3": "cluster big: g2 left the run (its lock); the cluster is deployed as one unit"}
    assert incomplete(CLUSTERS, ["g1", "g2", "g3", "p1", "p2"], "its image") == {}


def test_serial_that_splits_a_cluster_refuses_its_members_only():
    found = split_by_batches(CLUSTERS, [["g1", "g2", "p1"], ["g3", "p2"]])
    assert set(found) == {"g1", "g2", "g3", "p1", "p2"}
    assert found["g1"] == ("cluster big: serial puts its members g1, g2, g3 in different batches; a pipeline is "
                           "rolled out as one unit: give a serial that keeps them in one batch")
    assert split_by_batches(CLUSTERS, [["g1", "g2", "g3"], ["p1", "p2", "solo"]]) == {}


def test_members_that_would_run_different_images_are_refused():
    a, b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    found = mixed_images(CLUSTERS, {"g1": a, "g2": a, "g3": b, "p1": a, "p2": a})
    assert set(found) == {"g1", "g2", "g3"}
    assert found["g3"] == (f"cluster big: its members would run different vllm_env images (g1 {a[:19]}, g2 {a[:19]}, "
                           f"g3 {b[:19]}); Ray needs the same Ray and Python on every node")


def test_a_limit_that_leaves_out_members_of_a_cluster_refuses_the_selected_ones(tmp_path):
    from tests.support.planning import cluster_inventory
    from tritonops.planning.cluster_rollout import outside_limit

    hosts = cluster_inventory(tmp_path)  # solo, and the cluster big of g1, g2, g3
    by_name = {h.name: h for h in hosts}
    assert outside_limit([by_name["g1"], by_name["solo"]], hosts) == {
        "g1": "cluster big: --limit leaves out its members g2, g3; a pipeline is deployed and rolled back as one "
              "unit: select all of them"}
    assert outside_limit(hosts, hosts) == {} and outside_limit([by_name["solo"]], hosts) == {}
