"""deploy's canary gate (`deploy --bench-gate`, issue #24) as data: its settings from the inventory, the short bench
it runs on the first batch, the recorded run of the previous release it is compared with, and its verdict. Pure.

The gate benches the first batch's replicas directly (not through a balancer, which also sends to replicas still on
the previous release) with its own small workload, and keeps the run like any bench, under the new release: the
next deploy's gate compares with it. The previous release's run is the newest kept run of that release measured the
same way: the same model, through the replicas, the same input and output lengths, at the gate's concurrency.
Where none is kept (the first gated deploy), the gate has nothing to compare with: it passes and says so.

The rollout stops when, at any of the gate's levels, output tokens/s fell by more than
`tritonops_bench_gate_throughput` (a fraction, default 0.10) or TTFT p99 rose by more than
`tritonops_bench_gate_ttft_p99` (default 0.25), or when a request of the gate's bench failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tritonops.bench.plan import DEFAULT_INPUT_TOKENS, Workload, parse_levels
from tritonops.bench.results import BenchSummary, Change, Comparison, compare
from tritonops.planning.entries import host_where
from tritonops.values.numbers import real_number, whole_number

THROUGHPUT_VAR = "tritonops_bench_gate_throughput"
TTFT_VAR = "tritonops_bench_gate_ttft_p99"
CONCURRENCY_VAR = "tritonops_bench_gate_concurrency"
REQUESTS_VAR = "tritonops_bench_gate_requests"
INPUT_TOKENS_VAR = "tritonops_bench_gate_input_tokens"
OUTPUT_TOKENS_VAR = "tritonops_bench_gate_output_tokens"

THROUGHPUT_FIGURE = "output_tokens_per_s"
TTFT_FIGURE = "ttft_p99_ms"


@dataclass(frozen=True)
class GateSettings:
    throughput_drop: float = 0.10     # output tokens/s may fall by at most this fraction
    ttft_p99_rise: float = 0.25       # TTFT p99 may rise by at most this fraction
    concurrency: tuple[int, ...] = (8,)
    requests: int = 32                # per level
    input_tokens: int = DEFAULT_INPUT_TOKENS
    output_tokens: int = 64

    def workload(self, model: str) -> Workload:
        return Workload(model, self.concurrency, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                        requests=self.requests)

    @property
    def thresholds(self) -> dict[str, float]:
        return {THROUGHPUT_FIGURE: self.throughput_drop, TTFT_FIGURE: self.ttft_p99_rise}


def gate_settings(host: Any) -> GateSettings:
    """The gate's settings as `host` (the run's first serving host) sees them; InputError naming file:line."""
    given = host.vars
    default = GateSettings()

    def fraction(var: str, fallback: float) -> float:
        if var not in given:
            return fallback
        return real_number(given[var], var, host_where(host, var), maximum=10.0)

    def whole(var: str, fallback: int, maximum: int) -> int:
        if var not in given:
            return fallback
        return whole_number(given[var], var, host_where(host, var), maximum=maximum)

    levels = default.concurrency
    if CONCURRENCY_VAR in given:
        levels = parse_levels(str(given[CONCURRENCY_VAR]), host_where(host, CONCURRENCY_VAR) or CONCURRENCY_VAR)
    return GateSettings(fraction(THROUGHPUT_VAR, default.throughput_drop), fraction(TTFT_VAR, default.ttft_p99_rise),
                        levels, whole(REQUESTS_VAR, default.requests, 100_000),
                        whole(INPUT_TOKENS_VAR, default.input_tokens, 1_000_000),
                        whole(OUTPUT_TOKENS_VAR, default.output_tokens, 1_000_000))


def same_measure(run: BenchSummary, now: BenchSummary) -> bool:
    """Whether `run` measured what the gate's run `now` did: model, mode, the way in, lengths and every level."""
    levels = {level.concurrency for level in now.levels}
    return (run.model == now.model and run.through == now.through
            and run.workload.get("mode", "kserve") == now.workload.get("mode", "kserve")
            and run.workload.get("input_tokens") == now.workload.get("input_tokens")
            and run.workload.get("output_tokens") == now.workload.get("output_tokens")
            and levels <= {level.concurrency for level in run.levels})


def baseline(runs: Iterable[BenchSummary], now: BenchSummary, previous: str) -> BenchSummary | None:
    """The newest kept run of release `previous` measured as `now` was."""
    found = [run for run in runs if run.release == previous and same_measure(run, now)]
    return max(found, key=lambda run: run.started) if found else None


@dataclass(frozen=True)
class GateVerdict:
    passed: bool
    release: str                      # the release the first batch runs now
    previous: str | None              # the release it replaced (None: none on the batch's hosts)
    reasons: tuple[str, ...] = ()     # why it did not pass, one per figure or failure
    said: str = ""                    # one line: what was compared, or why nothing was
    comparison: Comparison | None = None

    @property
    def line(self) -> str:
        return "; ".join(self.reasons) if self.reasons else self.said


def verdict(now: BenchSummary, settings: GateSettings, previous: str | None,
            against: BenchSummary | None) -> GateVerdict:
    failed = [f"{level.requests_failed} of {level.requests_ok + level.requests_failed} requests failed at "
              f"concurrency {level.concurrency}" for level in now.levels if level.requests_failed]
    if against is None:
        why = ("no earlier release on these hosts" if previous is None else
               f"no run of release {previous} kept like this one (model {now.model}, {now.workload.get('input_tokens')}"
               f"/{now.workload.get('output_tokens')} tokens, concurrency "
               f"{','.join(str(level.concurrency) for level in now.levels)}, through the replicas)")
        return GateVerdict(not failed, now.release, previous, tuple(failed),
                           f"nothing to compare with ({why}): this run is kept for the next deploy's gate")
    comparison = compare(now, against, thresholds=settings.thresholds)
    worse = [_said(change, settings) for change in comparison.regressions
             if change.figure in settings.thresholds]
    compared = [change for change in comparison.changes if change.figure in settings.thresholds]
    said = f"against release {against.release}: " + ", ".join(
        f"{_name(c.figure)} {c.ratio:.2f}x at concurrency {c.concurrency}" for c in compared)
    return GateVerdict(not failed and not worse, now.release, previous, tuple(failed + worse), said, comparison)


def _name(figure: str) -> str:
    return {THROUGHPUT_FIGURE: "output tokens/s", TTFT_FIGURE: "TTFT p99"}[figure]


def _said(change: Change, settings: GateSettings) -> str:
    if change.figure == THROUGHPUT_FIGURE:
        return (f"output tokens/s at concurrency {change.concurrency} fell to {change.now:,.1f} from {change.before:,.1f}"
                f" ({change.ratio:.2f}x; {THROUGHPUT_VAR} allows a drop of {settings.throughput_drop:.0%})")
    return (f"TTFT p99 at concurrency {change.concurrency} rose to {change.now:,.1f} ms from {change.before:,.1f} ms"
            f" ({change.ratio:.2f}x; {TTFT_VAR} allows a rise of {settings.ttft_p99_rise:.0%})")
