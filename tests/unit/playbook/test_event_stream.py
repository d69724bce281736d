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


def test_v_shows_each_step_and_its_time_and_vv_what_it_printed(tmp_path):
    from tritonops.cli.cmd_deploy import _Progress
    from tritonops.cli.output import Output
    from tritonops.playbook.host_task import StepRun, TaskOutcome

    done = HostDone("p", HostResult("h1", "changed", "put /x", TaskOutcome(
        "put_file", ("put /x",), runs=(StepRun("put /x (3 bytes, mode 644)", 0.25, "wrote\nsecond line"),)),
        task="a file"))
    shown = {}
    for verbosity in (0, 1, 2):
        path = tmp_path / f"err-{verbosity}"
        with open(path, "w") as err:
            _Progress(Output(verbosity=verbosity, file=err, err_file=err))(done)
        shown[verbosity] = path.read_text()
    assert "0.25s put /x (3 bytes, mode 644)" not in shown[0] and "h1" in shown[0]
    assert "0.25s put /x (3 bytes, mode 644)" in shown[1] and "second line" not in shown[1]
    assert "0.25s put /x (3 bytes, mode 644)" in shown[2] and "| second line" in shown[2]
