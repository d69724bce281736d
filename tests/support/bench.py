"""`tritonops bench`'s inputs and results made for a test: a host as the bench plan reads it, a level read from
aiperf's real JSON exports (tests/fixtures/aiperf/), a kept summary."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.support.paths import FIXTURES
from tritonops.bench.results import BenchSummary, level_from_aiperf

AIPERF = FIXTURES / "aiperf"


@dataclass
class Host:
    name: str
    groups: tuple[str, ...] = ()
    vars: dict = field(default_factory=dict)
    history: dict = field(default_factory=dict)


def fixture_level(name: str, concurrency: int):
    return level_from_aiperf(concurrency, (AIPERF / name).read_text())


def summary(release: str, started: str, levels, through: str = "balancer", tokens=(128, 128)) -> BenchSummary:
    return BenchSummary("dep", release, "vllm_model", through, ("door-1",),
                        {"input_tokens": tokens[0], "output_tokens": tokens[1]}, tuple(levels), started, "0.13.0")
