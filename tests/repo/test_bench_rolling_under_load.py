"""bench/rolling_under_load.py (issue #41): how it counts each request (failed: lost before its answer began, or a
plain generate lost at all; cut: a stream that began and did not end whole), its verdict for a deploy (0 failed,
0 cut, p99 during <= 2 x before, a new release on every selected host and no other) and for a killed replica (0
failed, cuts only among the streams flowing when it died, DOWN then UP at the door), and its load against a real
HTTP server on 127.0.0.1 that cuts its streams while the change runs: the bench says so and exits non-zero; the
same server, not cutting, meets the goal."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.bench_scripts import bench
from tests.support.paths import FIXTURES


def _bench():
    return bench("rolling_under_load")


def answer(phase="before", stream=True, began=True, whole=True, sent=0.0, ended=0.1, error=None):
    return _bench().Answer(phase, stream, began, whole, sent, ended, error)


def deployed(exit_code=0, selected=("a", "b"), before=None, after=None):
    return _bench().Deployed(("deploy",), exit_code, 10.0, frozenset(selected), before or {"a": "r1", "b": "r1"},
                             after or {"a": "r2", "b": "r2"})


def killed(down=12.0, up=30.0):
    return _bench().Killed("a", 0, "tritonops-chat", 42, 10.0, 10.5, down, up, (0, 1))


def steady(phases=("before", "during", "after")):
    """Whole answers of 100 ms in every phase: nothing to fault."""
    return [answer(phase, stream=i % 2 == 0, sent=i, ended=i + 0.1) for phase in phases for i in range(10)]


def test_a_request_lost_before_its_answer_began_fails_and_a_stream_lost_after_is_cut():
    bench = _bench()
    lost = [answer("during", stream=False, began=False, whole=False, error="HTTP 502"),
            answer("during", stream=True, began=False, whole=False, error="ConnectionResetError"),
            answer("during", stream=False, began=True, whole=False, error="IncompleteRead"),  # one piece: failed
            answer("during", stream=True, began=True, whole=False, error="IncompleteRead"),
            answer("during", stream=True, began=True, whole=False, error='data: {"error": "x"}')]
    counted = bench.figures(steady() + lost)
    assert counted["before"] == counted["after"] == bench.PhaseFigures(10, 10, 0, 0, pytest.approx(100.0),
                                                                       pytest.approx(100.0))
    assert (counted["during"].requests, counted["during"].ok, counted["during"].failed, counted["during"].cut) == \
        (15, 10, 3, 2)
    assert bench.figures([answer("during", whole=False, began=False)])["during"].p99_ms is None


def test_a_deploy_meets_its_goal_only_with_nothing_failed_or_cut_and_p99_within_twice_before():
    bench = _bench()
    assert bench.verdict(steady(), deployed()) == []
    assert bench.exit_status(bench.verdict(steady(), deployed())) == 0
    cut = steady() + [answer("during", began=True, whole=False, error="IncompleteRead: 12 bytes read")]
    assert bench.verdict(cut, deployed()) == ["1 stream(s) cut: stream sent in during: IncompleteRead: 12 bytes read"]
    failed = steady() + [answer("after", stream=False, began=False, whole=False, error="HTTP 503: b''")]
    assert bench.verdict(failed, deployed()) == ["1 request(s) failed: generate sent in after: HTTP 503: b''"]
    slow = steady(("before", "after")) + [answer("during", sent=i, ended=i + 0.25) for i in range(10)]
    assert bench.verdict(slow, deployed()) == ["p99 during 250 ms > 2 x p99 before 100 ms"]
    assert bench.verdict(steady(), deployed(exit_code=2)) == ["the deploy exited 2"]
    assert bench.exit_status(bench.verdict(cut, deployed())) == 1
    assert bench.verdict(steady(), deployed(), ["client 3: RuntimeError: boom"]) == [
        "a client thread raised: client 3: RuntimeError: boom"]


def test_a_deploy_must_make_a_new_release_on_each_host_it_selects_and_on_no_other():
    bench = _bench()
    assert bench.release_problems(deployed(after={"a": "r2", "b": "r1"})) == [
        "b: no new release (current r1, before r1)"]
    assert bench.release_problems(deployed(after={"a": "r2"})) == ["b: no new release (current none, before r1)"]
    limited = deployed(selected=("a",), after={"a": "r2", "b": "r1"})
    assert bench.release_problems(limited) == []
    assert bench.release_problems(deployed(selected=("a",))) == [
        "b: not selected, yet its current release changed (r1 -> r2)"]


def test_a_killed_replica_may_cut_only_the_streams_flowing_when_it_died():
    bench = _bench()
    flowing = answer("during", began=True, whole=False, sent=9.8, ended=10.2, error="IncompleteRead")
    assert bench.verdict(steady() + [flowing], killed()) == []  # reported as cut, within the goal
    assert bench.figures(steady() + [flowing])["during"].cut == 1
    later = answer("during", began=True, whole=False, sent=11.0, ended=11.5, error="IncompleteRead")
    assert bench.verdict(steady() + [later], killed()) == [
        "1 stream(s) cut that were not flowing when the replica died: stream sent in during: IncompleteRead"]
    unbegun = answer("during", stream=True, began=False, whole=False, sent=10.1, ended=10.2, error="HTTP 502")
    assert bench.verdict(steady() + [unbegun], killed()) == ["1 request(s) failed: stream sent in during: HTTP 502"]
    assert bench.verdict(steady(), killed(down=None, up=None)) == ["the door never saw a replica 0 DOWN"]
    assert bench.verdict(steady(), killed(up=None)) == ["a replica 0 was not UP again at the door"]


def test_the_doors_retries_are_counted_over_the_run_and_from_a_reload_on_only_what_the_new_worker_saw():
    bench = _bench()
    assert bench.redispatched({"b1": ("10", 5), "b2": ("20", 0)}, {"b1": ("10", 12), "b2": ("20", 3)}) == (10, False)
    assert bench.redispatched({"b1": ("10", 5)}, {"b1": ("11", 2)}) == (2, True)


# --- the load against a real server on 127.0.0.1 -------------------------------------------------------------------

EVENTS = 4
DELAY_S = 0.2  # each answer's time: what p99 is made of, far above a loaded machine's jitter


class _Handler(BaseHTTPRequestHandler):
    """A door, shrunk: generate answers JSON; generate_stream sends EVENTS events, or, while the server cuts, its
    first event and then closes the connection without the last chunk."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        time.sleep(DELAY_S)
        if not self.path.endswith("/generate_stream"):
            body = json.dumps({"text_output": "hello"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index in range(EVENTS):
            event = f"data: {json.dumps({'text_output': f't{index}'})}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            if self.server.cutting.is_set():
                self.wfile.flush()
                self.close_connection = True
                return
        self.wfile.write(b"0\r\n\r\n")


@pytest.fixture
def door():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.cutting = threading.Event()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


def _run(server, cut: bool):
    """The bench's load (4 clients, 1 s before and after, at most 25 requests each) over the server; the change
    (1 s) makes the server cut its streams when `cut`."""
    bench = _bench()

    def change():
        if cut:
            server.cutting.set()
        time.sleep(1.0)
        server.cutting.clear()
        return deployed()

    answers, done, raised = bench.run_load([bench.Door("127.0.0.1", server.server_address[1], None)], clients=4,
                                           tokens=4, quiet_s=1.0, change=change, max_per_client=25)
    return answers, bench.verdict(answers, done, raised)


def test_against_a_door_that_cuts_streams_the_bench_counts_every_cut_and_exits_non_zero(door):
    answers, missed = _run(door, cut=True)
    counted = _bench().figures(answers)
    cut = [a for a in answers if a.cut]
    # the two streaming clients' streams answered while it cuts: sent during, or sent before and still waiting
    assert len(cut) >= 2 and {a.phase for a in cut} <= {"before", "during"} and counted["during"].cut >= 1
    assert all("IncompleteRead" in a.error for a in cut) and not any(a.failed for a in answers)
    assert counted["after"].cut == 0 and counted["after"].ok == counted["after"].requests > 0
    assert len(missed) == 1 and missed[0].startswith(f"{len(cut)} stream(s) cut: stream sent in ")
    assert _bench().exit_status(missed) == 1


def test_the_same_door_not_cutting_meets_the_goal(door):
    answers, missed = _run(door, cut=False)
    assert missed == [] and _bench().exit_status(missed) == 0
    assert all(a.whole for a in answers) and {a.phase for a in answers} == {"before", "during", "after"}


def test_the_door_servers_in_service_are_counted_per_balancer_and_any_moment_with_fewer_misses_the_goal():
    from tritonops.door.runtime import parse_stat

    rows = parse_stat((FIXTURES / "haproxy" / "door_show_stat.txt").read_text())
    counted = _bench().in_service([("door-1", row) for row in rows])
    http = [row for row in rows if row.kind == "server" and row.backend.endswith("_http")]
    assert [row.status for row in http] == ["UP 1/3", "DRAIN 1/3"]  # the first one in service, the other not
    assert counted == {"door-1": 1}
    fewer_in_service = _bench().fewer_in_service
    steady = [(10.0, {"door-1": 3}), (10.5, {"door-1": 3}), (11.0, {"door-1": 3})]
    assert fewer_in_service(steady, {"door-1": 3}) == []
    dipped = steady + [(12.5, {"door-1": 2}), (13.0, {"door-1": 3})]
    assert fewer_in_service(dipped, {"door-1": 3}) == ["door-1: 2 of 3 door server(s) in service 2.5 s into the change"]
    assert fewer_in_service([], {"door-1": 3}) == ["the door was never sampled during the change"]
