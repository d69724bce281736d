"""Package the probe program for a host that has only `python3`.

The bundle is the probe program with the part of nvidia-ml-py's `pynvml` module it calls embedded
(`pynvml_slice`), compressed and sent on stdin; the remote command line is fixed and small, so
nothing needs quoting and nothing is written to the host's disk.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import shlex
import threading
import zlib
from pathlib import Path

from tritonops.values.user_dirs import user_path

_BOOTSTRAP = ("import sys,zlib,base64;"
              "exec(compile(zlib.decompress(base64.b64decode(sys.stdin.read())),'tritonops-probe','exec'))")


_built: list[bytes] = []
_building = threading.Lock()


def bundle() -> bytes:
    """The compressed program text, built once per process (it never changes); threads asking while
    it is being built wait for it."""
    with _building:
        if not _built:
            _built.append(_cached_build())
        return _built[0]


def _cached_build() -> bytes:
    """Slicing pynvml parses 350 kB of Python (~0.3 s): the result is kept in the user's cache folder
    under a digest of its inputs (this program, pynvml's source, the slicer), like a .pyc. The inputs
    are read as files: a cache hit imports neither them nor `ast`."""
    inputs = [_source_of("tritonops.facts.probe_program"), _pynvml_file().read_text(encoding="utf-8"),
              _source_of("tritonops.facts.pynvml_slice")]
    digest = hashlib.sha256("\0".join(inputs).encode()).hexdigest()[:32]
    cache = user_path("cache", f"probe-{digest}.b64")
    try:
        return cache.read_bytes()
    except OSError:
        pass
    built = _build(inputs[0], inputs[1])
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        partial = cache.with_name(f"{cache.name}.{os.getpid()}.{threading.get_ident()}")
        partial.write_bytes(built)
        os.replace(partial, cache)
    except OSError:
        pass  # no cache folder: built again next time
    return built


def _source_of(module: str) -> str:
    return Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")


def _pynvml_file() -> Path:
    # pynvml's source is read, not imported: importing it would cost the controller ~60 ms for nothing.
    return Path(importlib.util.find_spec("pynvml").origin)


def pynvml_source() -> str:
    """What the bundle carries of pynvml (see pynvml_slice)."""
    from tritonops.facts.pynvml_slice import probe_names, slice_module

    return slice_module(_pynvml_file().read_text(encoding="utf-8"),
                        probe_names(_source_of("tritonops.facts.probe_program")))


def _build(program_source: str, pynvml_full: str) -> bytes:
    from tritonops.facts.pynvml_slice import probe_names, slice_module

    program = "\n".join([
        "import sys, types",
        f"_pynvml_source = {slice_module(pynvml_full, probe_names(program_source))!r}",
        "_module = types.ModuleType('pynvml')",
        "_module.__file__ = 'pynvml.py'",
        "sys.modules['pynvml'] = _module",
        "exec(compile(_pynvml_source, 'pynvml.py', 'exec'), _module.__dict__)",
        "del _pynvml_source, _module",
        program_source,
    ])
    return base64.b64encode(zlib.compress(program.encode(), 6))  # level 9: 4x the time for 2% less


def command(disk_path: str, python: str = "python3") -> str:
    """The shell command that runs the bundle read from stdin."""
    return f"{shlex.quote(python)} -c {shlex.quote(_BOOTSTRAP)} {shlex.quote(disk_path)}"
