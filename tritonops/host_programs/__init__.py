"""The programs tritonops runs on a host, kept as real module files so they are linted and imported
by tests, and packed here into what a host runs: `python3 -c SOURCE ARGS...` (or `sh -c` for the
shell ones). A host has nothing of tritonops installed, so each program, once packed, is one
self-contained source of the standard library (the hub program also imports the hub library it runs
beside); this package imports nothing of tritonops outside itself.

Each Python program does its work in `main()`, called under `if __name__ == "__main__":`, which is
true under `python3 -c`: importing one (as the tests do) runs nothing. A program shares code with
another through a module of this package (triton_client.py): it imports it the ordinary way, so it
imports and lints as it is, and the packer puts that module's text in the import line's place, the
way Ansible packs module_utils into a module it ships.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

_FOLDER = Path(__file__).resolve().parent
_SHARED_IMPORT = re.compile(r"^from tritonops\.host_programs\.(\w+) import [\w, ]+$", re.MULTILINE)


@lru_cache(maxsize=None)
def source(name: str) -> str:
    """The text of the program `name` (a module of this package, or `name.sh` for a shell one), read
    once per process from the package's own folder, so an installed wheel finds it too; each import
    of a sibling module replaced by that module's text."""
    file = _FOLDER / (name if name.endswith(".sh") else f"{name}.py")
    text = file.read_text(encoding="utf-8")
    return _SHARED_IMPORT.sub(lambda line: source(line.group(1)).rstrip("\n"), text)


def argv(name: str, *args: str, python: str = "python3") -> tuple[str, ...]:
    """The argument list that runs the program `name` on a host with `args` as its sys.argv[1:]."""
    return (python, "-c", source(name), *args)
