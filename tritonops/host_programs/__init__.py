"""The programs tritonops runs on a host, kept as real module files so they are linted and imported
by tests, and packed here into what a host runs: `python3 -c SOURCE ARGS...` (or `sh -c` for the
shell ones). A host has nothing of tritonops installed, so each program is one self-contained file of
the standard library (the hub program also imports the hub library it runs beside); this package
imports nothing of tritonops either.

Each Python program does its work in `main()`, called under `if __name__ == "__main__":`, which is
true under `python3 -c`: importing one (as the tests do) runs nothing.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

_FOLDER = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def source(name: str) -> str:
    """The text of the program `name` (a module of this package, or `name.sh` for a shell one), read
    once per process from the package's own folder, so an installed wheel finds it too."""
    file = _FOLDER / (name if name.endswith(".sh") else f"{name}.py")
    return file.read_text(encoding="utf-8")


def argv(name: str, *args: str, python: str = "python3") -> tuple[str, ...]:
    """The argument list that runs the program `name` on a host with `args` as its sys.argv[1:]."""
    return (python, "-c", source(name), *args)
