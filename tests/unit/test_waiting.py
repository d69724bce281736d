"""wait_until: one deadline, a growing interval, an early stop."""

import pytest

from tritonops.waiting import GaveUp, wait_until


class FakeClock:
    """Time that moves only when the waiter sleeps: the schedule is checked exactly, instantly."""

    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 3))
        self.now += seconds


def test_returns_the_first_truthy_value_and_stops_asking():
    answers = iter([None, 0, "", "ready", "never asked"])
    clock = FakeClock()
    assert wait_until(lambda: next(answers), timeout_s=10, clock=clock, sleep=clock.sleep) == "ready"
    assert clock.sleeps == [0.2, 0.3, 0.45]


def test_gives_none_at_the_deadline_after_a_last_look_with_capped_intervals():
    calls, clock = [], FakeClock()
    assert wait_until(lambda: calls.append(clock.now), timeout_s=5, interval_s=1, max_interval_s=2,
                      clock=clock, sleep=clock.sleep) is None
    assert clock.sleeps == [1, 1.5, 2, 0.5]  # the last sleep ends exactly at the deadline
    assert calls == [0, 1, 2.5, 4.5, 5]


def test_stop_ends_the_wait_early_with_its_reason():
    clock = FakeClock()
    stops = iter([None, "the container exited (code 1)"])
    with pytest.raises(GaveUp, match="exited"):
        wait_until(lambda: None, timeout_s=60, stop=lambda: next(stops), clock=clock, sleep=clock.sleep)
    assert clock.now < 1
