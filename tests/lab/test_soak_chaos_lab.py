"""Soak and chaos, small, on the test lab's full host (bench/soak.py and bench/chaos.py at small K/N):
- soak: 2 deploy -> rollback -> bad deploy cycles with a retention of 2 leave no release folder beyond it,
  no container of a removed release, no lock, no image more than before, no SSH connection left open
  by the controller (host-wide sessions and processes are reported, not asserted: the lab is shared);
- chaos: a rolling deploy hit by a seeded fault (SSH cut, dockerd killed, Triton killed, the controller
  SIGKILLed, at a phase of the run), then a plain rerun: every fault landed (carried out while the run's
  own progress showed it in the fault's phase, and it hit: tritonops/lab/fault_plan.py), every trial
  converges with no manual step, and right after each fault `current` still names a release that passed
  its gate.
Deployments of their own (`t-soak`, `t-chaos`) with ports of their own, removed at the end.
"""

from __future__ import annotations

import pytest
import yaml

from tests.support.bench_scripts import bench
from tritonops.lab.faults import Injector, deployment_inventory, plan_faults
from tritonops.lab.testing import FULL_2080TI

SEED = 15  # each kind at another phase, the serve one 2.1 s into the serve task
CHAOS_KINDS = ("ssh", "dockerd", "triton", "controller-kill")
# the phases a fault can land in on the lab: the weights phase of a trial (the weights are there, read with the
# batch's facts) lasts milliseconds, so a fault planned there is inert (bench/chaos.py reports it so)
CHAOS_PHASES = ("lock", "image", "release", "serve")


@pytest.fixture
def containers(lab):
    return {FULL_2080TI: lab.host(FULL_2080TI).container}


def test_soak_cycles_leave_nothing_beyond_the_retention(lab, tmp_path, containers):
    soak = bench("soak")
    inventory = tmp_path / "soak.yml"
    inventory.write_text(yaml.safe_dump(deployment_inventory(
        yaml.safe_load(lab.inventory_file.read_text()), "t-soak", 18600, hosts=[FULL_2080TI])))
    try:
        figures = soak.run_soak(str(inventory), containers, 2, deployment="t-soak", keep=2, say=lambda *_: None)
    finally:
        soak.clean(containers, "t-soak")
    assert soak.within_policy(figures) == []
    assert len(figures["seconds"]) == 2
    left = figures["leftovers"][FULL_2080TI]
    # first, 2 good, 2 bad: one good release pruned by the second good deploy (keep 2 + current + previous)
    assert left["releases"] == 4 and left["releases_beyond_retention"] == 0, figures["after"][FULL_2080TI]
    assert left["orphan_containers"] == 0 and left["lock_files"] == 0 and left["partial_releases"] == 0
    assert left["images_added"] <= 0 and figures["controller_after"]["ssh_connections"] == 0


def test_chaos_every_faulted_rolling_deploy_converges_on_a_plain_rerun(lab, tmp_path, containers):
    chaos = bench("chaos")
    inventory, playbook, found, relays = chaos.setup(yaml.safe_load(lab.inventory_file.read_text()), lab.prefix,
                                                     [FULL_2080TI], tmp_path, "t-chaos", 18610, None)
    assert found == containers
    injector = Injector(containers, relays, None, triton="tritonops-t-chaos")
    faults = plan_faults(SEED, len(CHAOS_KINDS), [FULL_2080TI], CHAOS_KINDS, CHAOS_PHASES)
    chaos.clean(containers, "t-chaos")
    try:
        records = chaos.run_chaos(inventory, playbook, containers, injector, faults, deployment="t-chaos",
                                  say=lambda *_: None)
    finally:
        injector.heal()
        chaos.clean(containers, "t-chaos")
        for relay in relays.values():
            relay.close()
    assert sorted(r["kind"] for r in records) == sorted(CHAOS_KINDS)
    assert sorted(r["phase"] for r in records) == sorted(CHAOS_PHASES)
    inert = [(r["label"], r["landing"]) for r in records if not r["landed"]]
    assert inert == [], "\n".join(str(i) for i in inert) + "\n" + "\n".join(r["faulted_tail"] for r in records)
    bad = [(r["label"], r["did"], r["problems"], r["manual"], r["intact_after_fault"]) for r in records
           if not r["converged"] or r["manual"] or r["intact_after_fault"]]
    assert bad == [], "\n".join(str(b) for b in bad) + "\n" + "\n".join(r["faulted_tail"] for r in records)


def test_the_chaos_read_of_a_host_fails_when_docker_exec_fails_instead_of_reading_nothing_deployed():
    # issue #45 item 13: a host container that is gone read as "no lock, no current, nothing running" before
    from tritonops.errors import TritonopsError
    from tritonops.lab.faults import current_state

    with pytest.raises(TritonopsError, match="tritonops-labtest-no-such-host: could not read the deployment's state"):
        current_state("tritonops-labtest-no-such-host", "/opt/tritonops", "dep", "tritonops-dep")
