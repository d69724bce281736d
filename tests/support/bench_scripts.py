"""The scripts under bench/ as modules, for the tests that pin their arithmetic and verdicts: loaded as they run
(their own folder first on sys.path, for goals.py and their sibling benches), each once, registered as
`bench_<name>` (their dataclasses look their module up by name)."""

from __future__ import annotations

import functools
import importlib.util
import sys
from types import ModuleType

from tests.support.paths import REPO

BENCH = REPO / "bench"


@functools.cache
def bench(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))
