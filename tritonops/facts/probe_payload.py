"""Package the probe program for a host that has only `python3`.

The bundle is the probe program with nvidia-ml-py's `pynvml` module embedded,
compressed and sent on stdin; the remote command line is fixed and small, so
nothing needs quoting and nothing is written to the host's disk.
"""

from __future__ import annotations

import base64
import inspect
import shlex
import zlib
from functools import lru_cache

import pynvml

from tritonops.facts import probe_program

_BOOTSTRAP = ("import sys,zlib,base64;"
              "exec(compile(zlib.decompress(base64.b64decode(sys.stdin.read())),'tritonops-probe','exec'))")


@lru_cache(maxsize=1)
def bundle() -> bytes:
    """The compressed program text (built once per process: it never changes)."""
    pynvml_source = inspect.getsource(pynvml)
    program = "\n".join([
        "import sys, types",
        f"_pynvml_source = {pynvml_source!r}",
        "_module = types.ModuleType('pynvml')",
        "_module.__file__ = 'pynvml.py'",
        "sys.modules['pynvml'] = _module",
        "exec(compile(_pynvml_source, 'pynvml.py', 'exec'), _module.__dict__)",
        "del _pynvml_source, _module",
        inspect.getsource(probe_program),
    ])
    return base64.b64encode(zlib.compress(program.encode(), 9))


def command(disk_path: str, python: str = "python3") -> str:
    """The shell command that runs the bundle read from stdin."""
    return f"{shlex.quote(python)} -c {shlex.quote(_BOOTSTRAP)} {shlex.quote(disk_path)}"
