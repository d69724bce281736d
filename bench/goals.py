"""A bench's stated goals as data, and its verdict: every bench that states a goal says, at its end, each goal met
or MISSED with the figure and the limit, and exits 1 when one missed (issue #45: they printed their goal and
exited 0 whatever they measured). Each bench builds its goals with a pure `goals(...)` from its figures
(tests/repo/test_bench_goals.py checks them on figures that meet and that miss); `verdict` prints and gives the code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable


@dataclass(frozen=True)
class Goal:
    """`measured` at most `limit` (`at_most`), or at least it. A figure that was not measured (None, NaN) misses:
    a bench that could not measure its goal has not met it. `detail` says what a miss was made of."""

    what: str
    measured: float | None
    limit: float
    at_most: bool = True
    unit: str = ""
    detail: str = ""

    @property
    def met(self) -> bool:
        if self.measured is None or (isinstance(self.measured, float) and math.isnan(self.measured)):
            return False
        return self.measured <= self.limit if self.at_most else self.measured >= self.limit

    def line(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        measured = "not measured" if self.measured is None or (
            isinstance(self.measured, float) and math.isnan(self.measured)) else f"{self.measured:g}{unit}"
        detail = f" ({self.detail})" if self.detail and not self.met else ""
        return (f"goal {'met' if self.met else 'MISSED'}: {self.what} {measured}, goal "
                f"{'<=' if self.at_most else '>='} {self.limit:g}{unit}{detail}")


def missed(goals: Iterable[Goal]) -> list[Goal]:
    return [goal for goal in goals if not goal.met]


def verdict(goals: Iterable[Goal], say: Callable[[str], None] = print) -> int:
    """One line per goal, then the bench's exit code: 1 when any goal missed (or none was given), else 0."""
    goals = list(goals)
    for goal in goals:
        say(goal.line())
    if not goals:
        say("goal MISSED: nothing was measured")
        return 1
    misses = missed(goals)
    say(f"{len(goals) - len(misses)} of {len(goals)} goals met" + (
        f"; missed: {', '.join(goal.what for goal in misses)}" if misses else ""))
    return 1 if misses else 0
