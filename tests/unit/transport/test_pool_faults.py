"""Whatever goes wrong opening or using one host's connection stays that host's one-line result."""

from tritonops.errors import TritonopsError
from tritonops.results import HostResult
from tritonops.transport.pool import one_line, run_on_hosts
from tritonops.transport.spec import ConnectionSpec

CLOSED_PORT = 1  # nothing listens on 127.0.0.1:1 here


def test_exceptions_while_connecting_become_that_hosts_unreachable_result_and_the_others_go_on():
    specs = [
        ConnectionSpec("nan-timeout", "127.0.0.1", port=CLOSED_PORT, connect_timeout_s=float("nan")),
        ConnectionSpec("inf-timeout", "127.0.0.1", port=CLOSED_PORT, connect_timeout_s=float("inf")),
        ConnectionSpec("missing-proxy", "127.0.0.2", proxy_command="/nonexistent/proxy -W %h:%p"),
        ConnectionSpec("garbage-key", "127.0.0.1", port=CLOSED_PORT, key_files=("/dev/null",)),
        ConnectionSpec("local", "localhost", local=True),
    ]
    results = run_on_hosts(specs, lambda transport, spec: HostResult(spec.name, "ok", transport.run("echo hi").stdout))
    assert [r.status for r in results] == ["unreachable"] * 4 + ["ok"]
    assert results["local"].msg == "hi\n"
    for result in results.failed:
        assert result.msg and "\n" not in result.msg, result


def test_exceptions_in_the_task_become_failed_with_one_line():
    def task(transport, spec):
        if spec.name == "bug":
            raise KeyError("multi\nline \x1b[31mred")
        if spec.name == "ours":
            raise TritonopsError("refused")
        return HostResult(spec.name, "ok")

    results = run_on_hosts([ConnectionSpec(n, "localhost", local=True) for n in ("bug", "ours", "fine")], task)
    assert (results["bug"].status, results["bug"].msg) == ("failed", "KeyError: 'multi\\nline \\x1b[31mred'")
    assert (results["ours"].status, results["ours"].msg) == ("failed", "refused")
    assert results["fine"].status == "ok"


def test_one_line_joins_lines_and_drops_control_characters():
    assert one_line("first\n\n  second  \r\nthird\x1b]0;x\x07") == "first | second | third"
