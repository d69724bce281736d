"""Where things are, whatever folder a test file sits in: the checkout, the fixtures, the JSON cases."""

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
CASES = TESTS / "cases"
SHARED = Path(os.environ.get("TRITONOPS_SHARED", REPO.parent / "shared"))
