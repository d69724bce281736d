"""Reading a host's :8002/metrics page on the host itself (the flow is tritonops.reading.metrics).

The page is fetched by a small program run as an argument list on the host (address and port are
checked here and passed as arguments); it answers JSON: the HTTP status and the page, or why there
was none. A host whose port is closed, answers an HTTP error or something that is not Triton's
metrics gets a failed result saying so in one line; the others are unaffected.
"""

from __future__ import annotations

import json

from tritonops import host_programs
from tritonops.metrics.figures import HostFigures, MetricsPageError, host_figures
from tritonops.metrics.targets import WILDCARD_BINDS
from tritonops.facts.queries import CommandQuery
from tritonops.values.ssh_target import host_address

MAX_PAGE = 32 * 1024 * 1024
FETCH_SOURCE = host_programs.source("metrics_page")  # host_programs/metrics_page.py


def fetch_query(address: str, port: int) -> CommandQuery:
    return CommandQuery(("python3", "-c", FETCH_SOURCE, address, str(port), str(MAX_PAGE)))


def local_address(bind_address: str | None, where: str | None = None) -> str:
    """Where the metrics port answers on the host itself: loopback, unless Triton is bound to one address."""
    if (bind_address or "") in WILDCARD_BINDS:
        return "127.0.0.1"
    return host_address(bind_address, where)


def page_verdict(port: int, stdout: str) -> HostFigures:
    """The fetch program's answer -> figures; MetricsPageError saying what the port did instead. Pure."""
    return host_figures(_page(port, stdout))


def pages_verdict(answers: list[tuple[int, str]]) -> HostFigures:
    """Several ports' answers (a host's replicas) -> one host's figures; MetricsPageError naming the first port
    that did not answer Triton's metrics. Pure."""
    pages = [_page(port, stdout) for port, stdout in answers]
    return host_figures(pages if len(pages) > 1 else pages[0])


def _page(port: int, stdout: str) -> str:
    """The page a port answered, checked to be Triton's metrics; else MetricsPageError."""
    try:
        answer = json.loads(stdout)
    except ValueError:
        raise MetricsPageError(f"could not read metrics port {port} (the fetch program answered "
                               f"{stdout.strip()[:80]!r})") from None
    if answer.get("error"):
        raise MetricsPageError(f"metrics port {port} {answer['error']}")
    if answer.get("status") != 200:
        raise MetricsPageError(f"metrics port {port} answered HTTP {answer.get('status')}")
    page = answer.get("page") or ""
    if len(page) > MAX_PAGE:
        raise MetricsPageError(f"metrics port {port} answered more than {MAX_PAGE // 2**20} MiB")
    try:
        host_figures(page)
    except MetricsPageError as err:
        raise MetricsPageError(f"metrics port {port} answered something else: {err}") from None
    return page
