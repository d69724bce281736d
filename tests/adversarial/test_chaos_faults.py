"""The chaos and soak helpers that need no lab (tritonops/lab/faults.py, fault_plan.py, bench/chaos.py's
trial, bench/soak.py's counting): a seed gives the same faults, every kind comes in turn, a relay cut
drops its connections but the next one gets through, the inventory a bench writes keeps a deployment
and ports of its own; a fault counts as landed only when the run's own progress shows it in the fault's
phase (on its host) when it was carried out and it hit something, and a trial fires it only then."""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.support.bench_scripts import bench
from tritonops.lab.fault_plan import Effect, Fault, Landing, Line, Shot, Window, landing, open_target, phase_windows
from tritonops.lab.faults import (KINDS, PHASES, Relay, deployment_inventory, paused, plan_faults,
                                  relayed_known_hosts, tcp_connections_to)



def test_the_same_seed_plans_the_same_faults_and_another_seed_others():
    hosts = ["b", "a", "c"]
    assert plan_faults(13, 12, hosts) == plan_faults(13, 12, list(reversed(hosts)))
    assert plan_faults(13, 12, hosts) != plan_faults(14, 12, hosts)


def test_every_kind_comes_in_turn_at_a_known_phase_on_a_known_host():
    faults = plan_faults(7, 2 * len(KINDS), ["h1", "h2"])
    assert sorted(f.kind for f in faults) == sorted(KINDS * 2)
    assert {f.kind for f in faults[:len(KINDS)]} == set(KINDS)
    assert all(f.phase in PHASES and f.host in ("h1", "h2") for f in faults)
    assert [f.trial for f in faults] == list(range(2 * len(KINDS)))


def test_a_fault_is_planned_at_the_first_line_of_a_short_phase_and_within_the_serve_phase():
    faults = plan_faults(3, 40, ["h"])
    assert {f.delay_s for f in faults if f.phase != "serve"} == {0.0}
    serve = [f.delay_s for f in faults if f.phase == "serve"]
    assert serve and all(0 <= d <= PHASES["serve"].spread_s for d in serve) and len(set(serve)) > 1


def test_only_the_kinds_asked_for():
    assert {f.kind for f in plan_faults(1, 6, ["h"], ("ssh", "triton"))} == {"ssh", "triton"}


def _echo_server():
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=lambda c=conn: [c.sendall(d) for d in iter(lambda: c.recv(1024), b"")],
                             daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()
    return server


def test_a_cut_relay_drops_every_connection_and_the_next_one_gets_through():
    server = _echo_server()
    relay = Relay(server.getsockname())
    try:
        first = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
        first.sendall(b"ping")
        assert first.recv(16) == b"ping"
        assert tcp_connections_to({relay.port}) == 1
        assert relay.cut() == 1
        assert first.recv(16) == b""  # the session is gone, as a dropped network would leave it
        second = socket.create_connection(("127.0.0.1", relay.port), timeout=5)
        second.sendall(b"again")
        assert second.recv(16) == b"again"
        second.close()
        first.close()
    finally:
        relay.close()
        server.close()


LAB = {"all": {"vars": {"ansible_user": "root", "ansible_ssh_common_args": "-o UserKnownHostsFile=/k"},
               "children": {"lab": {"children": {"lab_full": {
                   "hosts": {"a": {"ansible_host": "127.0.0.1", "ansible_port": 22200, "tritonops_model": "/m"},
                             "b": {"ansible_host": "127.0.0.1", "ansible_port": 22201}},
                   "vars": {"tritonops_build_host": "b", "tritonops_model": "/t"}}}}}}}


def test_a_bench_inventory_has_its_own_deployment_and_ports_and_goes_through_the_relays():
    class FakeRelay:
        port = 40000

    data = deployment_inventory(LAB, "soak", 19500, hosts=["a"], relays={"a": FakeRelay()}, known_hosts="/kk")
    host = data["all"]["hosts"]["a"]
    assert list(data["all"]["hosts"]) == ["a"]
    assert (host["tritonops_deployment"], host["tritonops_http_port"], host["tritonops_grpc_port"],
            host["tritonops_metrics_port"], host["ansible_port"], host["tritonops_model"]) == ("soak", 19500, 19501,
                                                                                               19502, 40000, "/m")
    assert data["all"]["vars"]["tritonops_build_host"] == "a"  # b is not in the inventory
    assert data["all"]["vars"]["tritonops_known_hosts_file"] == "/kk"
    assert "ansible_ssh_common_args" not in data["all"]["vars"]


def test_a_bench_inventory_refuses_a_deployment_that_is_not_a_name():
    with pytest.raises(Exception, match="deployment"):
        deployment_inventory(LAB, "../etc", 19500)


def test_known_hosts_name_each_relay_port_with_the_hosts_key():
    lines = ["[127.0.0.1]:22200 ssh-ed25519 AAAA1", "[127.0.0.1]:22201 ssh-ed25519 AAAA2", "other ssh-rsa X"]
    assert relayed_known_hosts(lines, {22201: 40001}) == lines + ["[127.0.0.1]:40001 ssh-ed25519 AAAA2"]


def _soak():
    return bench("soak")


def test_soak_counts_what_exceeds_the_retention_and_orphaned_containers():
    soak = _soak()
    before = {"h": {"images": 3, "ssh_sessions": 1, "processes": 40, "root_kib": 100, "docker_kib": 1000}}
    after = {"h": {"images": 3, "ssh_sessions": 1, "processes": 40, "root_kib": 150, "docker_kib": 1200,
                   "releases": 9, "release_names": "r1 r2 r3 r4 r5 r6 r7 r8 r9", "partial": 1, "lock": 1,
                   "containers": 3, "container_names": "tritonops-soak tritonops-soak--r9-failed tritonops-soak--r0"}}
    left = soak.leftovers(before, after, 5)["h"]
    assert (left["releases_beyond_retention"], left["orphan_containers"], left["partial_releases"],
            left["lock_files"], left["root_growth_kib"]) == (2, 1, 1, 1, 50)
    figures = {"problems": [], "leftovers": {"h": left}, "controller_before": {"fds": 6, "threads": 1,
               "ssh_connections": 0}, "controller_after": {"fds": 6, "threads": 1, "ssh_connections": 1}}
    broken = soak.within_policy(figures)
    assert "h: releases_beyond_retention = 2" in broken and "h: orphan_containers = 1" in broken
    assert "controller: 1 SSH connection(s) to the hosts still open" in broken
    clean = dict(left, releases_beyond_retention=0, orphan_containers=0, partial_releases=0, lock_files=0)
    assert soak.within_policy(dict(figures, leftovers={"h": clean},
                                   controller_after=figures["controller_before"])) == []


H = "t-full-2080ti"
# A chaos trial's deploy as the bench read it on the lab (one host, serial 1): seconds, progress line
RUN = [Line(at, text) for at, text in (
    (1.11, f"facts  {H} ok 0.4s 1 GPU(s)"),
    (1.11, f"plan   {H} ok 0.0s vllm_model v1: /tmp/models/micro-llama TP 1, max_model_len 1024"),
    (1.24, f"lock   {H} ok 0.1s locked"),
    (1.64, f"image  {H} ok 0.2s tritonserver:vllm_env-42c31c0099ee present (117751907dd6)"),
    (1.64, "PLAY Triton + vLLM on every GPU host"),
    (1.89, "TASK deployment folder"),
    (1.89, f"  {H} ok 0.0s"),
    (1.89, "TASK releases folder"),
    (1.89, f"  {H} ok 0.0s"),
    (1.89, "TASK models folder (weights shared by releases)"),
    (1.89, f"  {H} ok 0.0s"),
    (1.89, "TASK vllm_env image on the host"),
    (1.89, f"  {H} ok 0.0s"),
    (1.89, "TASK model weights on the host, verified"),
    (1.90, f"  {H} ok 0.0s"),
    (1.90, "TASK release with the rendered model repository"),
    (2.24, f"  {H} changed 0.3s mkdir /opt/tritonops/t-chaos/releases/.20261202T041510Z-f4e8f7b8.partial; ..."),
    (2.24, "TASK Triton serves the release (health gate; the previous release comes back on failure)"),
    (9.01, f"  {H} changed 6.8s start tritonops-t-chaos on release 20261202T041510Z-f4e8f7b8 (GPUs [0]) and gate it"),
)]
ENDED = 9.12


def test_the_phases_of_a_run_come_from_its_own_progress():
    assert phase_windows(RUN) == [Window("lock", None, 1.24, 1.64), Window("image", None, 1.64, 1.89),
                                  Window("weights", H, 1.89, 1.90), Window("release", H, 1.90, 2.24),
                                  Window("serve", H, 2.24, 9.01)]
    # read up to the middle of the serve task: the serve phase is still open
    assert phase_windows(RUN[:-1])[-1] == Window("serve", H, 2.24, None)


def test_in_a_rolling_run_a_task_phase_is_each_hosts_own():
    lines = [Line(at, text) for at, text in (
        (1.0, "lock   a ok 0.1s locked"), (1.0, "lock   b ok 0.1s locked"), (1.2, "image  a ok"), (1.2, "image  b ok"),
        (1.3, "PLAY p"), (1.4, "TASK vllm_env image on the host"), (1.4, "  a ok 0.0s"),
        (1.5, "TASK model weights on the host, verified"), (2.0, "  a ok 0.5s"),
        (2.0, "TASK Triton serves the release"), (5.0, "  a changed 3.0s"),
        (5.1, "TASK vllm_env image on the host"), (5.1, "  b ok 0.0s"),
        (5.2, "TASK model weights on the host, verified"), (5.3, "  b unreachable 0.1s connection lost"),
    )]
    assert phase_windows(lines) == [Window("lock", None, 1.0, 1.2), Window("image", None, 1.2, 1.5),
                                    Window("weights", "a", 1.5, 2.0), Window("serve", "a", 2.0, 5.0),
                                    Window("weights", "b", 5.2, 5.3)]
    dockerd_b = Fault(0, "dockerd", "weights", 0.0, "b")
    assert landing(dockerd_b, lines, 6.0, Shot(1.6, 1.8, Effect(True, "killed dockerd (pid 7) on b")), 4) == Landing(
        False, "fired at 1.60-1.80 s, outside weights on b (5.20-5.30 s): killed dockerd (pid 7) on b")
    assert landing(dockerd_b, lines, 6.0, Shot(5.21, 5.25, Effect(True, "killed dockerd (pid 7) on b")), 4).landed
    # the controller is in the weights phase whatever host runs it
    assert landing(Fault(0, "controller-int", "weights", 0.0, "b"), lines, 6.0,
                   Shot(1.6, 1.6, Effect(True, "sent SIGINT to the controller (pid 9)")), 99).landed


def test_a_fault_that_hit_inside_its_phase_landed():
    ssh = Fault(0, "ssh", "serve", 2.0, H)
    assert landing(ssh, RUN, ENDED, Shot(4.3, 4.31, Effect(True, f"cut 2 SSH connection(s) to {H}")), 4) == Landing(
        True, f"cut 2 SSH connection(s) to {H}, at 4.30-4.31 s in serve on {H} (2.24-9.01 s)")
    kill = Fault(1, "controller-kill", "release", 0.0, H)
    assert landing(kill, RUN[:16], 2.0, Shot(1.95, 1.95, Effect(True, "sent SIGKILL to the controller (pid 9)")),
                   -signal.SIGKILL) == Landing(True, "sent SIGKILL to the controller (pid 9), at 1.95-1.95 s in "
                                                     "release (1.90-2.00 s)")


# What the bench did before (issue #30): the fault fired from a timer after the deploy had finished, and the
# trial counted as converged. Each of these is inert now, with the reason.
def test_a_fault_fired_after_the_run_ended_did_not_land():
    late = Fault(0, "controller-kill", "image", 4.0, H)
    assert landing(late, RUN, ENDED, Shot(9.5, 9.5, Effect(False, "the controller had already finished")), 0) == Landing(
        False, "fired at 9.50-9.50 s, after the run ended (9.12 s): the controller had already finished")
    cut = Fault(1, "ssh", "serve", 6.0, H)
    assert landing(cut, RUN, ENDED, Shot(9.3, 9.3, Effect(False, f"cut 0 SSH connection(s) to {H}")), 0) == Landing(
        False, f"fired at 9.30-9.30 s, after the run ended (9.12 s): cut 0 SSH connection(s) to {H}")


def test_a_fault_carried_out_in_another_phase_than_its_own_did_not_land():
    image = Fault(0, "controller-kill", "image", 4.0, H)  # image + 4 s: the run was serving by then
    assert landing(image, RUN, ENDED, Shot(5.64, 5.64, Effect(True, "sent SIGKILL to the controller (pid 9)")),
                   -signal.SIGKILL) == Landing(False, "fired at 5.64-5.64 s, outside image (1.64-1.89 s): "
                                                      "sent SIGKILL to the controller (pid 9)")
    # begun inside the release phase, done after it: not known to have hit it
    slow = Fault(1, "dockerd", "release", 0.0, H)
    assert not landing(slow, RUN, ENDED, Shot(2.0, 2.5, Effect(True, f"killed dockerd (pid 7) on {H}")), 2).landed


def test_a_fault_that_hit_nothing_or_was_never_fired_did_not_land():
    triton = Fault(0, "triton", "serve", 1.0, H)
    missed = Shot(3.24, 3.5, Effect(False, "docker kill tritonops-t-chaos on h: Error response from daemon: "
                                           "Cannot kill container: tritonops-t-chaos: is not running"))
    assert landing(triton, RUN, ENDED, missed, 0) == Landing(False, "no effect: " + missed.effect.said)
    weights = Fault(1, "ssh", "weights", 0.0, H)  # the weights were there: the phase lasted 10 ms
    assert landing(weights, RUN, ENDED, None, 0) == Landing(
        False, f"not fired: weights on {H} (1.89-1.90 s) was over before the fault was due (0.0 s into it)")
    # the run failed before the serve task
    assert landing(triton, RUN[:17], 2.3, None, 2) == Landing(
        False, f"not fired: the run never reached serve on {H} (it ended at 2.30 s)")
    # a SIGKILL the run did not end by
    assert landing(Fault(2, "controller-kill", "serve", 0.0, H), RUN, ENDED,
                   Shot(2.3, 2.3, Effect(True, "sent SIGKILL to the controller (pid 9)")), 0) == Landing(
        False, "the controller exited 0, not killed by SIGKILL: sent SIGKILL to the controller (pid 9)")


def test_a_fault_is_due_only_while_its_phase_is_open_and_its_delay_is_up():
    serve = Fault(0, "triton", "serve", 2.0, H)
    upto = RUN[:-1]  # read up to the serve task's start
    assert open_target(serve, upto, 3.0) is None  # 0.76 s into the phase: not yet
    assert open_target(serve, upto, 4.3) == Window("serve", H, 2.24, None)
    assert open_target(serve, RUN, 9.05) is None  # the serve task's result was read: over
    assert open_target(Fault(1, "triton", "serve", 2.0, "other-host"), upto, 4.3) is None


# A stand-in controller: the progress of a one-host deploy, with the serve task lasting `SERVE_S`; the weights
# task's two lines come in one write (a phase over before anyone can act in it).
FAKE_DEPLOY = r"""
import sys, time
def say(*lines):
    sys.stderr.write("".join(l + "\n" for l in lines)); sys.stderr.flush()
say("lock   h ok 0.1s locked"); time.sleep(0.3)
say("image  h ok 0.1s present"); time.sleep(0.3)
say("TASK vllm_env image on the host", "  h ok 0.0s")
say("TASK model weights on the host, verified", "  h ok 0.0s")
say("TASK release with the rendered model repository"); time.sleep(0.5)
say("  h changed 0.5s")
if sys.argv[1] == "fails-before-serve":
    sys.exit(2)
say("TASK Triton serves the release"); time.sleep(1.5)
say("  h changed 1.5s")
"""


class FakeInjector:
    def __init__(self, effect=Effect(True, "hit")):
        self.effect, self.calls = effect, []

    def inject(self, fault, controller):
        self.calls.append(fault.label)
        if fault.kind == "controller-kill":
            controller.send_signal(signal.SIGKILL)
        return self.effect


def _trial(fault, injector, mode="ok"):
    trial = bench("chaos").Trial([sys.executable, "-c", FAKE_DEPLOY, mode], fault, injector)
    code = trial.wait(timeout_s=60)
    return trial, code, trial.landing(code)


def test_a_trial_fires_its_fault_inside_its_phase():
    trial, code, landed = _trial(Fault(0, "triton", "serve", 0.5, "h"), FakeInjector())
    assert landed.landed and code == 0, landed
    serve = [w for w in phase_windows(trial.lines) if w.phase == "serve"][0]
    assert serve.start_s + 0.5 <= trial.shot.started_s and trial.shot.done_s <= serve.end_s


def test_a_trial_pauses_the_controller_in_a_short_phase_and_kills_it_there():
    injector = FakeInjector(Effect(True, "sent SIGKILL to the controller"))
    trial, code, landed = _trial(Fault(0, "controller-kill", "release", 0.0, "h"), injector)
    assert code == -signal.SIGKILL and landed.landed, landed
    assert trial.lines[-1].text == "TASK release with the rendered model repository"


def test_a_trial_does_not_fire_a_fault_whose_phase_is_over_or_never_comes():
    injector = FakeInjector()
    _, _, landed = _trial(Fault(0, "dockerd", "weights", 0.0, "h"), injector)
    assert not landed.landed and landed.why.startswith("not fired: weights on h"), landed
    _, code, landed = _trial(Fault(1, "dockerd", "serve", 0.0, "h"), injector, "fails-before-serve")
    assert code == 2 and landed.why.startswith("not fired: the run never reached serve on h"), landed
    assert injector.calls == []


def test_a_paused_process_prints_nothing_until_it_goes_on():
    child = subprocess.Popen([sys.executable, "-u", "-c", "import time\nwhile True:\n print(1)\n time.sleep(0.01)"],
                             stdout=subprocess.PIPE)
    fd = child.stdout.fileno()
    try:
        assert select.select([fd], [], [], 5)[0]
        with paused(child) as still:
            assert still
            while select.select([fd], [], [], 0)[0]:
                os.read(fd, 65536)  # what it wrote before the pause
            time.sleep(0.3)
            assert select.select([fd], [], [], 0)[0] == []
        assert select.select([fd], [], [], 5)[0]
    finally:
        child.kill()
        child.wait()
    with paused(child) as still:
        assert not still
