"""deploy.door_rollout's pacing across hosts (issue #41): hosts roll at once, but a deployment's door keeps at least
half its servers in service (two hosts of one replica each never both leave it)."""

import threading
import time

import pytest

from tritonops.deploy.door_rollout import DoorRollout, drains_at_once


@pytest.mark.parametrize("servers, at_once", [(1, 1), (2, 1), (3, 1), (4, 2), (9, 4)])
def test_fewer_than_half_of_a_door_s_servers_drain_at_once_and_always_at_least_one(servers, at_once):
    assert drains_at_once(servers) == at_once


def most_at_once(rollout: DoorRollout, deployment: str, hosts: int) -> int:
    """`hosts` threads each taking one turn (holding it 50 ms): the most that held one at the same time."""
    held, most, lock = [0], [0], threading.Lock()

    def one():
        with rollout._turn(deployment):
            with lock:
                held[0] += 1
                most[0] = max(most[0], held[0])
            time.sleep(0.05)
            with lock:
                held[0] -= 1

    threads = [threading.Thread(target=one) for _ in range(hosts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return most[0]


def test_two_hosts_of_one_replica_each_take_turns_and_nine_servers_let_four_go_at_once():
    rollout = DoorRollout(pool=None, balancers=("door-1",), deployments={}, _sizes={"pair": 2, "fleet": 9})
    assert most_at_once(rollout, "pair", 2) == 1
    assert most_at_once(rollout, "fleet", 6) == 4


def test_without_a_door_yet_every_host_goes_at_once():
    rollout = DoorRollout(pool=None, balancers=("door-1",), deployments={}, _sizes={"new": 0})
    assert most_at_once(rollout, "new", 3) == 3
