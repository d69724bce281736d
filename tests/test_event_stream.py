"""One event stream: every event once to every subscriber, in order; the report is one of them."""

import threading

from tritonops.deploy.run import DeployReport
from tritonops.playbook.events import EventStream, HostDone, PhaseDone, TaskStarted
from tritonops.results import HostResult


def test_every_subscriber_hears_every_event_once_in_order_even_from_threads():
    heard_a, heard_b = [], []
    stream = EventStream([heard_a.append, None, heard_b.append])
    events = [PhaseDone(HostResult(f"h{n}", "ok", task="facts")) for n in range(200)]
    threads = [threading.Thread(target=lambda chunk=events[i::4]: [stream(e) for e in chunk]) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert heard_a == heard_b and sorted(e.result.host for e in heard_a) == sorted(e.result.host for e in events)


def test_the_report_keeps_phases_and_task_results_in_the_order_they_were_learned():
    report = DeployReport()
    ticks = iter(range(100))
    stream = EventStream([report.subscriber(lambda: next(ticks))])
    stream.phase(HostResult("a", "ok", task="facts"))
    stream(TaskStarted("p", "t", ("a",)))
    stream(HostDone("p", HostResult("a", "changed", task="t")))
    stream.phase(HostResult("a", "ok", task="events"))
    assert [(r.task, r.status) for r in report.results] == [("facts", "ok"), ("t", "changed"), ("events", "ok")]
    assert [when for when, _ in report.timeline] == [0, 1, 2]
    assert [r.task for r in report.phases] == ["facts", "events"] and report.recap.to_json()["a"]["changed"] == 1
