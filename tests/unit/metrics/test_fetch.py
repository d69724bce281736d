"""What `tritonops metrics` makes of the fetch program's answer for one host (pure): figures, or the
port's problem in one line."""

import json

import pytest

from tests.support.paths import FIXTURES
from tritonops.errors import InputError
from tritonops.metrics.fetch import FETCH_SOURCE, fetch_query, local_address, page_verdict
from tritonops.metrics.figures import MetricsPageError

REAL = FIXTURES / "real"


def answer(status=200, page=None, error=None) -> str:
    return json.dumps({"status": status, "page": page, "error": error})


def test_a_real_page_gives_its_models():
    figures = page_verdict(8002, answer(page=(REAL / "h200-serve-two-models" / "metrics.txt").read_text()))
    assert [model.model for model in figures.models] == ["qwen05", "qwen7b"]


@pytest.mark.parametrize("stdout, problem", [
    (answer(status=None, error="closed (connection refused)"), "metrics port 9102 closed (connection refused)"),
    (answer(status=None, error="did not answer within 10 s"), "metrics port 9102 did not answer within 10 s"),
    (answer(status=404, page=None), "metrics port 9102 answered HTTP 404"),
    (answer(page="SSH-2.0-OpenSSH_9.2\r\n"), "metrics port 9102 answered something else: not Prometheus text: "
                                             "line 1: expected '<name>[{labels}] <value> [timestamp]'"),
    (answer(page="go_goroutines 7\n"), "metrics port 9102 answered something else: no Triton metrics (nv_*)"),
    ("Traceback (most recent call last):", "could not read metrics port 9102 (the fetch program answered"),
])
def test_a_port_that_is_closed_or_answers_garbage_is_one_line_naming_the_port(stdout, problem):
    with pytest.raises(MetricsPageError) as caught:
        page_verdict(9102, stdout)
    assert str(caught.value).startswith(problem) and "\n" not in str(caught.value)


def test_the_page_is_read_where_triton_listens_and_the_values_are_arguments():
    assert local_address("0.0.0.0") == local_address("") == "127.0.0.1"
    assert local_address("10.1.2.3") == "10.1.2.3"
    assert fetch_query("127.0.0.1", 8002).argv == ("python3", "-c", FETCH_SOURCE, "127.0.0.1", "8002", "33554432")
    with pytest.raises(InputError, match="^hosts.yml:3: host address '127.0.0.1; reboot'"):
        local_address("127.0.0.1; reboot", "hosts.yml:3")


def test_a_hosts_replicas_pages_add_up_to_one_host_and_a_bad_one_is_named():
    from tritonops.metrics.fetch import pages_verdict

    page = (REAL / "h200-serve-two-models" / "metrics.txt").read_text()
    one = {m.model: m for m in page_verdict(8002, answer(page=page)).models}
    two = {m.model: m for m in pages_verdict([(8002, answer(page=page)), (8012, answer(page=page))]).models}
    assert set(two) == set(one) and any(one[m].requests > 0 for m in one)
    for name in one:  # counters add up; per-request averages stay what each replica measured
        assert (two[name].requests, two[name].failures) == (2 * one[name].requests, 2 * one[name].failures)
        assert two[name].average_ms == one[name].average_ms
    with pytest.raises(MetricsPageError, match="^metrics port 8012 closed"):
        pages_verdict([(8002, answer(page=page)), (8012, answer(status=None, error="closed (connection refused)"))])
