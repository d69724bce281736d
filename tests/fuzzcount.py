"""How many examples each fuzz test tried, printed at the end of the run (see conftest.py)."""

from collections import Counter

tried: Counter = Counter()
