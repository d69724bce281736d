"""balancer/door_figures: a door's requests and refusals by reason, from `show stat` captured from Debian's HAProxy
2.6.12 running the rendered door after a known mix of 14 requests (tests/support/haproxy_door_capture.py; the fixtures'
README lists them): every figure is what those requests must give."""


from tests.support import paths
from tritonops.door.figures import BalancerFigures, DoorFigures, door_figures
from tritonops.door.runtime import parse_stat

FIXTURES = paths.FIXTURES / "haproxy"


def figures(name: str, deployments=None) -> BalancerFigures:
    return door_figures(parse_stat((FIXTURES / name).read_text()), deployments)


def test_the_doors_answers_fall_apart_by_reason_exactly_as_the_requests_were_sent():
    (door,) = figures("door_show_stat.txt").doors
    rate, queue_ms = door.rate, door.queue_ms  # the last second's requests and HAProxy's running average
    assert door == DoorFigures(
        deployment="chat", door="http", requests=14, rate=rate,
        answered_2xx=8, answered_4xx=2, answered_5xx=4,
        refused=4,            # 403 not_exposed, 401 unauthorized, 503 queue_full, 503 no_replica
        refused_4xx=2,        # not_exposed, unauthorized
        refused_503=2,        # queue_full, no_replica
        queue_timeouts=1,     # the request queued past 1.5 s
        replica_5xx=1,        # the replica's 500
        queue=0, queue_max=1, queue_ms=queue_ms, queue_max_ms=door.queue_max_ms, replicas_up=1, replicas=2)
    assert 300 <= door.queue_max_ms < 1500  # the one that waited about 0.4 s, then was served
    assert rate is not None and queue_ms is not None
    assert figures("door_show_stat.txt").summary() == "chat http: 14 requests, 3 refused with 503"


def test_a_request_waiting_in_the_queue_now_and_the_replicas_up():
    (door,) = figures("door_show_stat_busy.txt").doors
    assert (door.queue, door.replicas_up, door.replicas) == (1, 2, 2)
    (maint,) = figures("door_show_stat_maint.txt").doors
    assert (maint.replicas_up, maint.refused_503, maint.queue_timeouts) == (0, 1, 1)  # queue_full so far


def test_only_door_proxies_and_the_deployments_asked_for():
    assert figures("door_show_stat.txt", ["other"]) == BalancerFigures(())
    assert figures("show_stat_up.txt") == BalancerFigures(())  # the harness's frontend and backend are no door's
    assert BalancerFigures(()).summary() == "no door"
