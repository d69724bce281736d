"""What a bench found, per concurrency level, from aiperf's JSON export (profile_export_aiperf.json) and the
servers' own metrics; and a comparison with another release's run, marking what got worse. Pure.

aiperf reports latencies in ms and throughputs per second; its JSON has one object per metric tag with
`unit`, `avg` and percentiles (`p50`, `p99`). The server side (Triton's :8002, summed over the fleet's replicas)
is read before and after each level: queue and compute time per request are the differences of the cumulative
sums over the differences of the counts, so earlier traffic does not dilute them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tritonops.errors import TritonopsError
from tritonops.metrics.figures import hit_rate

# figure -> (aiperf tag, statistic)
AIPERF_FIGURES = {
    "output_tokens_per_s": ("output_token_throughput", "avg"),
    "requests_per_s": ("request_throughput", "avg"),
    "ttft_p50_ms": ("time_to_first_token", "p50"),
    "ttft_p99_ms": ("time_to_first_token", "p99"),
    "itl_p50_ms": ("inter_token_latency", "p50"),
    "itl_p99_ms": ("inter_token_latency", "p99"),
    "e2e_p50_ms": ("request_latency", "p50"),
    "e2e_p99_ms": ("request_latency", "p99"),
}
HIGHER_IS_BETTER = ("output_tokens_per_s", "requests_per_s")
DEFAULT_THRESHOLD = 0.10  # a figure 10 % worse than the other release's is marked


@dataclass(frozen=True)
class ServerTimes:
    """Per request at the servers over one level: Triton's queue and compute (infer) time, ms; and the share of
    prompt tokens the engines found in their prefix caches (None where the backend does not count them)."""
    requests: int
    queue_ms: float | None
    compute_ms: float | None
    prefix_hit_rate: float | None = None


@dataclass(frozen=True)
class LevelResult:
    concurrency: int
    requests_ok: int
    requests_failed: int
    figures: dict[str, float | None]   # AIPERF_FIGURES' names
    server: ServerTimes | None = None
    errors: tuple[str, ...] = ()        # aiperf's error summary: "count x message"

    def figure(self, name: str) -> float | None:
        return self.figures.get(name)


@dataclass(frozen=True)
class BenchSummary:
    deployment: str
    release: str
    model: str
    through: str                       # "balancer" or "replicas"
    endpoints: tuple[str, ...]
    workload: dict[str, Any]
    levels: tuple[LevelResult, ...]
    started: str = ""                  # UTC, ISO 8601
    aiperf_version: str = ""

    def level(self, concurrency: int) -> LevelResult | None:
        return next((level for level in self.levels if level.concurrency == concurrency), None)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def summary_from_json(doc: Mapping[str, Any]) -> BenchSummary:
    """A summary written by to_json() (the kept summary.json) back into data."""
    try:
        levels = tuple(LevelResult(int(level["concurrency"]), int(level["requests_ok"]),
                                   int(level["requests_failed"]), dict(level["figures"]),
                                   ServerTimes(**level["server"]) if level.get("server") else None,
                                   tuple(level.get("errors") or ()))
                       for level in doc["levels"])
        return BenchSummary(str(doc["deployment"]), str(doc["release"]), str(doc["model"]), str(doc["through"]),
                            tuple(doc["endpoints"]), dict(doc["workload"]), levels, str(doc.get("started") or ""),
                            str(doc.get("aiperf_version") or ""))
    except (KeyError, TypeError, ValueError) as err:
        raise TritonopsError(f"not a tritonops bench summary: {err}") from None


def level_from_aiperf(concurrency: int, text: str, server: ServerTimes | None = None) -> LevelResult:
    """One level from aiperf's profile_export_aiperf.json text; TritonopsError when it is not that file."""
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise TritonopsError(f"aiperf's JSON export cannot be read: {err}") from None
    if not isinstance(doc, dict) or "aiperf_version" not in doc:
        raise TritonopsError("not aiperf's JSON export (no aiperf_version)")
    figures = {name: _statistic(doc, tag, statistic) for name, (tag, statistic) in AIPERF_FIGURES.items()}
    ok = _statistic(doc, "request_count", "avg")
    failed = _statistic(doc, "error_request_count", "avg")
    errors = []
    for item in doc.get("error_summary") or ():
        if isinstance(item, dict):
            details = item.get("error_details") or {}
            message = details.get("message") or details.get("type") or "error"
            errors.append(f"{int(item.get('count') or 0)} x {str(message)[:200]}")
    return LevelResult(concurrency, int(ok or 0), int(failed or 0), figures, server, tuple(errors))


def aiperf_version(text: str) -> str:
    try:
        return str(json.loads(text).get("aiperf_version") or "")
    except (ValueError, AttributeError):
        return ""


def _statistic(doc: Mapping[str, Any], tag: str, statistic: str) -> float | None:
    metric = doc.get(tag)
    value = metric.get(statistic) if isinstance(metric, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def server_times(before: Iterable[Any], after: Iterable[Any], model: str) -> ServerTimes | None:
    """Queue and compute (infer) time per request over a level, from the servers' figures read before and
    after it (metrics.figures.ModelFigures of every replica: requests and average ms since start). None when
    the model's figures are missing or no request finished in between."""
    def totals(figures: Iterable[Any]) -> tuple[int, int, float, float, int, int] | None:
        found = [f for f in figures if getattr(f, "model", None) == model]
        if not found:
            return None
        requests = sum(f.requests for f in found)
        inferences = sum(f.inferences for f in found)
        queue = sum(f.average_ms.get("queue", 0.0) * f.requests for f in found)
        compute = sum(f.average_ms.get("compute_infer", 0.0) * f.inferences for f in found)
        return (requests, inferences, queue, compute, sum(f.prefix_queries for f in found),
                sum(f.prefix_hits for f in found))

    start, end = totals(before), totals(after)
    if start is None or end is None or end[0] <= start[0]:
        return None
    requests, inferences = end[0] - start[0], end[1] - start[1]
    queue = (end[2] - start[2]) / requests
    compute = (end[3] - start[3]) / inferences if inferences > 0 else None
    return ServerTimes(requests, round(queue, 3), None if compute is None else round(compute, 3),
                       hit_rate(end[5] - start[5], end[4] - start[4]))


@dataclass(frozen=True)
class Change:
    """One figure of one level against the other release's."""
    concurrency: int
    figure: str
    now: float
    before: float
    ratio: float        # now / before
    worse: bool         # worse by more than the threshold


@dataclass(frozen=True)
class Comparison:
    release: str                 # the run compared
    against: str                 # the other release's run
    threshold: float
    changes: tuple[Change, ...] = field(default=())

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(change for change in self.changes if change.worse)

    def change(self, concurrency: int, figure: str) -> Change | None:
        return next((c for c in self.changes if c.concurrency == concurrency and c.figure == figure), None)


def compare(now: BenchSummary, before: BenchSummary, threshold: float = DEFAULT_THRESHOLD,
            thresholds: Mapping[str, float] | None = None) -> Comparison:
    """Every figure of every concurrency level both runs have. A throughput is worse when it fell below
    (1 - threshold) x the other's; a latency when it rose above (1 + threshold) x. `thresholds`: per figure."""
    changes = []
    for level in now.levels:
        other = before.level(level.concurrency)
        if other is None:
            continue
        for name in AIPERF_FIGURES:
            value, old = level.figure(name), other.figure(name)
            if value is None or old is None or old <= 0:
                continue
            limit = (thresholds or {}).get(name, threshold)
            ratio = value / old
            worse = ratio < 1 - limit if name in HIGHER_IS_BETTER else ratio > 1 + limit
            changes.append(Change(level.concurrency, name, value, old, round(ratio, 4), worse))
    return Comparison(now.release, before.release, threshold, tuple(changes))


WORKLOAD_SHAPE = ("input_tokens", "output_tokens", "request_rate", "tenants", "prefix_tokens")  # two runs are compared only when these match


def comparable(run: BenchSummary, other: BenchSummary) -> bool:
    """Whether two runs measured the same thing: the same model in the same serving mode, the same way in (the
    door, or the replicas), the same workload (tokens in and out per request, request rate), at least one
    concurrency level in common."""
    return (run.model == other.model and run.through == other.through
            and run.workload.get("mode", "kserve") == other.workload.get("mode", "kserve")
            and all(run.workload.get(key) == other.workload.get(key) for key in WORKLOAD_SHAPE)
            and bool({level.concurrency for level in run.levels} & {level.concurrency for level in other.levels}))


def workload_said(run: BenchSummary) -> str:
    """The workload in a few words: what a run is compared on."""
    rate = run.workload.get("request_rate")
    return (f"{run.model} through {run.through}, {run.workload.get('input_tokens', '?')} tokens in / "
            f"{run.workload.get('output_tokens', '?')} out" + (f", {rate} requests/s" if rate else ""))


def previous_run(runs: Iterable[BenchSummary], now: BenchSummary, release: str | None = None) -> BenchSummary | None:
    """The newest kept run comparable with `now` (`started` orders them) of `release`, or (None) of any other
    release than now's."""
    found = [run for run in runs if comparable(now, run)
             and (run.release == release if release else run.release != now.release)]
    return max(found, key=lambda run: run.started) if found else None
