"""How many examples each fuzz test tried (printed at the end of the run, see conftest.py), and how
many of them the code under test accepted.

A fuzzer whose generator only makes input that is refused at the first check proves nothing about
what lies past it: `fuzzed` runs a fuzzer and fails unless it tried its examples and enough of them
were accepted (loaded, compiled, sized)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

tried: Counter = Counter()
accepted: Counter = Counter()


def fuzzed(name: str, fuzzer: Callable[[], None], *, examples: int, accepted_share: float) -> None:
    """Run `fuzzer` (a @given function counting under `name`): it must try at least 90 % of `examples`
    (fewer means its strategy filtered most of them away), and `accepted_share` of those it tried must
    have been accepted."""
    tried_before, accepted_before = tried[name], accepted[name]
    fuzzer()
    ran, passed = tried[name] - tried_before, accepted[name] - accepted_before
    assert ran >= 0.9 * examples, f"{name}: {ran} examples tried of the {examples} asked for"
    assert passed >= accepted_share * ran, (f"{name}: only {passed} of {ran} examples were accepted (wanted at "
                                            f"least {accepted_share:.0%}): the generator makes mostly refused input")
