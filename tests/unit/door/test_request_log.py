"""The doors' request log read back: lines captured from Debian's HAProxy 2.6.12 writing to the ring the renderer
configures (`format iso`, option httplog), through the real haproxy in tests/unit/render/test_door_config.py too."""

from tritonops.door.request_log import LoggedRequest, parse_request_log, show_events

CAPTURED = """\
2026-12-02T14:52:50.312672+00:00 127.0.0.1:46580 [02/Dec/2026:14:52:50.312] f f/<NOSRV> 0/-1/-1/-1/0 503 119 - - \
LR-- 1/1/0/0/0 0/0 "GET /full HTTP/1.1"
2026-12-02T14:52:53.331589+00:00 127.0.0.1:46592 [02/Dec/2026:14:52:50.325] f b/s1 0/0/-1/-1/3006 503 217 - - \
SC-- 1/1/0/0/3 0/0 "GET /x HTTP/1.1"
2026-12-02T14:53:01.101000+00:00 Server b/s1 is DOWN, reason: Layer4 connection problem, info: "Connection refused"
"""


def test_the_runtime_line_reads_the_ring_the_renderer_names():
    assert show_events() == "show events tritonops_log"


def test_each_request_line_becomes_its_timers_status_and_termination_and_other_lines_are_left_out():
    assert parse_request_log(CAPTURED) == (
        LoggedRequest("f", "f", "<NOSRV>", 0, -1, -1, -1, 0, 503, "LR--", "GET /full HTTP/1.1"),
        LoggedRequest("f", "b", "s1", 0, 0, -1, -1, 3006, 503, "SC--", "GET /x HTTP/1.1"),
    )


def test_captured_headers_a_tls_door_and_a_timer_logged_early_are_read():
    line = ('2026-12-02T15:00:00.000000+00:00 10.0.0.9:5000 [02/Dec/2026:15:00:00.000] door~ be/r0 1/0/0/12/+40 '
            '200 +512 - - ---- 2/2/1/1/0 0/0 {host.example} {text/event-stream} "POST /v2/models/m/generate_stream '
            'HTTP/1.1"')
    (found,) = parse_request_log(line)
    assert (found.frontend, found.server, found.response_ms, found.active_ms, found.request) == (
        "door~", "r0", 12, 40, "POST /v2/models/m/generate_stream HTTP/1.1")


def test_an_empty_ring_has_no_request():
    assert parse_request_log("") == ()
