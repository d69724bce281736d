"""Every bench that states a goal ends by saying which goal it met or MISSED and exits 1 on a miss (issue #45: they
printed their goal and exited 0 whatever they measured). Each bench's goals are a pure function of its figures,
checked here on figures that meet them and on figures that miss them; the benches themselves need a lab."""

from __future__ import annotations

import math

import pytest

from tests.support.bench_scripts import bench
from tests.support.paths import FIXTURES
from tritonops.deploy.moved import BytesMoved
from tritonops.deploy.run import DeployReport
from tritonops.playbook.host_task import TaskOutcome
from tritonops.results import HostResult
from tritonops.weights.relay import WeightsArrival
from tritonops.weights.transfer import WeightsMoved

goals = bench("goals")


def missed(found) -> list[str]:
    return [goal.what for goal in goals.missed(found)]


def test_the_verdict_names_each_missed_goal_and_exits_1():
    said = []
    code = goals.verdict([goals.Goal("the door's added latency at p50", 0.4, 1.0, unit="ms"),
                          goals.Goal("Ansible / tritonops", 6.5, 8.0, at_most=False, unit="x")], said.append)
    assert code == 1
    assert said == ["goal met: the door's added latency at p50 0.4 ms, goal <= 1 ms",
                    "goal MISSED: Ansible / tritonops 6.5 x, goal >= 8 x",
                    "1 of 2 goals met; missed: Ansible / tritonops"]
    assert goals.verdict([goals.Goal("restarts", 0, 0)], said.append) == 0


@pytest.mark.parametrize("measured", [None, math.nan])
def test_a_goal_that_was_not_measured_is_missed(measured):
    goal = goals.Goal("ready -> gate", measured, 1.0, unit="s")
    assert not goal.met and goal.line() == "goal MISSED: ready -> gate not measured, goal <= 1 s"
    assert goals.verdict([], lambda line: None) == 1   # nothing measured: nothing met


def test_overload_goals_the_doors_added_latency_and_its_fast_refusals():
    overload = bench("overload")
    assert missed(overload.goals(0.8, 12.0)) == []
    assert missed(overload.goals(1.3, 61.0)) == ["the door's added latency at p50",
                                                "refused at once, Ta p99 at the balancer"]
    assert missed(overload.goals(0.8, overload.quantile_ms([], 99))) == ["refused at once, Ta p99 at the balancer"]
    assert overload.quantile_ms([0.010, 0.020, 0.030], 99) == 30.0


def no_op(*, image: int = 0, weights: int = 0, relayed: dict[str, int] | None = None) -> DeployReport:
    """A deploy's report as the no-op benches read it: the image and the weights phase's bytes from the controller,
    and each host's arrival in the weights phase (relayed: from another host)."""
    report = DeployReport(image_bytes=image, weights_bytes=weights)
    for host, count in (relayed or {}).items():
        arrival = WeightsArrival(host, "qwen", "relayed", "node-a", bytes_received=count)
        report.timeline.append((0.0, HostResult(host, "changed", arrival.msg, arrival, task="weights")))
    return report


def test_a_deploy_moved_every_byte_its_report_says_the_image_weights_and_the_relays_did():
    report = no_op(image=100, weights=1000, relayed={"node-b": 4096})
    report.image_relayed = {"node-c": 2048, "node-b": 0}
    pushed = WeightsArrival("node-a", "qwen", "controller", "controller", 1000, 1000)  # in weights_bytes already
    task = TaskOutcome("model_weights", outcomes=(WeightsMoved(300),))
    report.timeline += [(0.0, HostResult("node-a", "changed", "", pushed, task="weights")),
                        (0.0, HostResult("node-a", "changed", "", task, task="weights"))]
    moved = BytesMoved.of(report)
    assert moved == BytesMoved(image=100, weights=1300, relayed={"node-b": 4096, "node-c": 2048})
    assert moved.total == 100 + 1300 + 4096 + 2048
    assert moved.summary() == ("image 100, weights 1,300 from the controller; 6,144 relayed host to host "
                               "(node-b 4,096, node-c 2,048)")
    assert BytesMoved.of(no_op()) == BytesMoved() and BytesMoved().total == 0


def test_deploy_fleet_goals_parallel_time_no_op_and_gate_lag():
    fleet = bench("deploy_fleet")
    nothing = BytesMoved.of(no_op())
    good = [(1, 40.0, 30.0, 0.3, "1/1", 2.0, 0, 0, nothing), (2, 46.0, 31.0, 0.5, "2/2", 2.5, 0, 0, nothing)]
    assert missed(fleet.fleet_goals(good)) == []
    bad = [(1, 40.0, 30.0, 0.3, "1/1", 2.0, 0, 0, nothing),
           (3, 52.0, 31.0, math.nan, "0/3", 2.5, 1, 1, BytesMoved.of(no_op(image=4096)))]
    assert missed(fleet.fleet_goals(bad)) == ["3 host(s): deploy time / one host's", "3 host(s): ready -> gate",
                                              "3 host(s): no-op restarts", "3 host(s): no-op bytes moved"]
    assert missed(fleet.replicas_goals([(1, 30.0, 20.0, 2.0, 0, 0, nothing),
                                        (4, 90.0, 80.0, 2.2, 0, 0, nothing)])) == []
    assert missed(fleet.replicas_goals([(4, 90.0, 80.0, 2.2, 2, 2, nothing)])) == ["4 replica(s): no-op restarts"]


@pytest.mark.parametrize("report", [no_op(weights=2048), no_op(relayed={"node-b": 4096})],
                         ids=["the weights phase's push", "the weights relay host to host"])
def test_a_fleet_no_op_that_moved_weights_misses_its_zero_bytes(report):
    """It read only the image's bytes from the controller: a relay or a weights push still said 0 bytes."""
    fleet = bench("deploy_fleet")
    row = (2, 46.0, 31.0, 0.5, "2/2", 2.5, 0, 0, BytesMoved.of(report))
    assert missed(fleet.fleet_goals([(1, 40.0, 30.0, 0.3, "1/1", 2.0, 0, 0, BytesMoved()), row])) == [
        "2 host(s): no-op bytes moved"]
    assert missed(fleet.replicas_goals([(2, 30.0, 20.0, 2.0, 0, 0, BytesMoved.of(report))])) == [
        "2 replica(s): no-op bytes moved"]


def test_deploy_noop_goals_nothing_moved_or_written_within_twice_the_probe():
    noop = bench("deploy_noop")
    assert missed(noop.goals(BytesMoved.of(no_op()), 0, 1.6, True)) == []
    moved = BytesMoved.of(no_op(image=10, weights=20, relayed={"node-b": 30}))
    assert missed(noop.goals(moved, 3, 2.4, False)) == [
        "no-op image bytes from the controller", "no-op weights bytes from the controller",
        "no-op bytes relayed host to host", "no-op writes (tasks changed)",
        "no-op deploy time / probe time (medians)", "no-op deploys that failed"]


def test_the_deploy_noop_goal_counts_the_weights_phase_and_each_hosts_relayed_bytes():
    """A multi-host no-op that relayed weights host to host, or pushed them in the weights phase, moved bytes."""
    noop = bench("deploy_noop")
    relayed = noop.goals(BytesMoved.of(no_op(relayed={"node-b": 4096})), 0, 1.6, True)
    assert missed(relayed) == ["no-op bytes relayed host to host"]
    assert relayed[2].line() == "goal MISSED: no-op bytes relayed host to host 4096 B, goal <= 0 B (node-b 4,096)"
    pushed = BytesMoved.of(no_op(weights=2048)) + BytesMoved.of(no_op())   # summed over the repeats
    assert missed(noop.goals(pushed, 0, 1.6, True)) == ["no-op weights bytes from the controller"]


def test_startup_time_goals_the_cached_start_of_help_version_and_a_usage_error():
    startup = bench("startup_time")
    cached = {("bytecode cached", case): 0.09 for case in ("--help", "--version", "usage error", "probe --help")}
    assert missed(startup.goals(cached)) == []
    slow = {**cached, ("bytecode cached", "--version"): 0.21, ("no bytecode", "--help"): 0.4}
    assert missed(startup.goals(slow)) == ["tritonops --version (bytecode cached)"]
    assert missed(startup.goals({})) == [f"tritonops {case} (bytecode cached)"
                                         for case in ("--help", "--version", "usage error")]


def test_probe_fleet_goals_against_openssh_and_ansible_per_size():
    probe = bench("probe_fleet")
    met = [{"hosts": 8, "ours_over_openssh": 1.1, "ansible_over_ours": 12.0}]
    assert missed(probe.goals(met)) == []
    slow = [{"hosts": 8, "ours_over_openssh": 1.3, "ansible_over_ours": 7.0},
            {"hosts": 64, "ours_over_openssh": 1.2, "ansible_over_ours": math.nan}]   # --no-ansible: no such goal
    assert missed(probe.goals(slow)) == ["N=8: tritonops / OpenSSH", "N=8: Ansible / tritonops"]
    assert len(probe.goals(slow)) == 3


def test_backend_overhead_goals_each_level_within_the_h200_goal_naming_the_misses():
    overhead = bench("backend_overhead")
    rows = [(1, {}, []), (64, {}, ["tok/s 0.91 < 0.97", "ITL p50 x1.2 > 1.05"])]
    found = overhead.goals(rows)
    assert missed(found) == ["64 streams: misses of the H200 goal"]
    assert found[1].line() == ("goal MISSED: 64 streams: misses of the H200 goal 2, goal <= 0 "
                               "(tok/s 0.91 < 0.97; ITL p50 x1.2 > 1.05)")


def test_image_fanout_goals_a_flat_controller_egress_and_a_no_op_that_moves_nothing():
    fanout = bench("image_fanout")
    mib = 1 << 20
    row = lambda n, out, noop: (n, 546 * mib, out, 0, 0, 0, 5.0, 0, noop, 0.1, [], [])  # noqa: E731
    assert missed(fanout.goals([row(1, 0, 0), row(8, 2 * mib, 0)], host_to_host=True)) == []
    assert missed(fanout.goals([row(8, 546 * mib, 4096)], host_to_host=True)) == [
        "N=8: image bytes through the controller / image size", "N=8: bytes moved by the same run again"]
    # through the controller the image leaves it once per host by design: only the no-op is held to a goal
    assert missed(fanout.goals([row(8, 8 * 546 * mib, 0)], host_to_host=False)) == []


def test_weights_fanout_goals_one_folder_out_of_the_controller_and_a_no_op_that_moves_nothing():
    fanout = bench("weights_fanout")
    size = 513 << 20
    assert missed(fanout.goals([(1, size, size, 4.1, 0, 0.1, []), (4, size, size, 12.3, 0, 0.1, [])], size,
                               host_to_host=True)) == []
    assert missed(fanout.goals([(4, 2 * size, size, 12.3, 10, 0.1, [])], size, host_to_host=True)) == [
        "N=4: weights bytes through the controller / folder size", "N=4: bytes moved by the same run again"]
    assert missed(fanout.goals([(4, 4 * size, size, 16.5, 0, 0.1, [])], size, host_to_host=False)) == []


def test_scaling_goals_n_replicas_give_n_times_one():
    scaling = bench("scaling")
    assert missed(scaling.goals(200.0, [(1, 198.0), (4, 780.0)])) == []
    assert missed(scaling.goals(200.0, [(1, 198.0), (8, 1400.0)])) == ["8 replica(s): tokens/s / (N x one replica's)"]
    assert missed(scaling.goals(0.0, [(2, 400.0)])) == ["2 replica(s): tokens/s / (N x one replica's)"]


def test_sizing_accuracy_goals_follow_what_it_prints_met_or_not_met():
    """It printed "goal NOT met" and exited 0 unless something over-promised."""
    accuracy = bench("sizing_accuracy")
    fixtures = FIXTURES / "real" / "calib-h200x2-tp2"
    replays = accuracy.load_calibration(fixtures)
    groups = accuracy.split_groups(replays, accuracy.read_split(fixtures, [r.record.run_id for r in replays]))
    multi = [r for r in replays if r.record.tensor_parallel_size > 1]
    assert missed(accuracy.calibration_goals(groups, multi)) == []   # the committed runs meet it (docs' figures)
    off = max(multi, key=lambda r: abs(r.error or 0))        # alone, the farthest run is its own median
    assert abs(off.error) > accuracy.TP_GOAL_MEDIAN
    assert missed(accuracy.calibration_goals([("farthest", [off])], [off])) == ["TP > 1: median |error|"]
    assert "NOT met" in accuracy.tp_goal_line([off])
