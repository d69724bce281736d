"""The probe bundle stays small and fast to run on a host, and the pynvml it carries is complete for
what the probe calls: a name the probe needs cannot have been sliced away (checked statically on
every global the slice reads, and by running the slice next to the real module)."""

import builtins
import importlib.util
import inspect
import json
import subprocess
import symtable
import sys
import types
from pathlib import Path

import pynvml
import pytest

from tritonops.facts import probe_payload, probe_program
from tritonops.facts.probe_parse import parse_probe_output
from tritonops.facts.pynvml_slice import probe_names, slice_module

FULL = Path(importlib.util.find_spec("pynvml").origin).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def sliced() -> str:
    return probe_payload.pynvml_source()


def module_of(source: str, name: str = "pynvml_slice_under_test") -> types.ModuleType:
    module = types.ModuleType(name)
    saved = sys.modules.get(name)
    sys.modules[name] = module  # pynvml finds itself in sys.modules to make its exception classes
    try:
        exec(compile(source.replace("sys.modules[__name__]", f"sys.modules[{name!r}]"), "pynvml.py", "exec"),
             module.__dict__)
    finally:
        if saved is None:
            sys.modules.pop(name, None)
    return module


def globals_read(source: str) -> set[str]:
    """Every global name the code reads: at module level, and free in any function or class body."""
    found = set()

    def walk(table: symtable.SymbolTable) -> None:
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (table.get_type() == "module" or symbol.is_global()):
                found.add(symbol.get_name())
        for child in table.get_children():
            walk(child)

    walk(symtable.symtable(source, "pynvml.py", "exec"))
    return found


def test_every_name_the_probe_uses_is_in_the_slice(sliced):
    module = module_of(sliced)
    used = {name for name in probe_names(inspect.getsource(probe_program)) if hasattr(pynvml, name)}
    assert {"nvmlInit", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetComputeRunningProcesses", "nvmlMemory_v2"} <= used
    assert not {name for name in used if not hasattr(module, name)}


def test_every_global_the_slice_reads_is_defined_in_it(sliced):
    """Defined: what the slice's module holds once run (its star imports and the exception classes it
    makes at run time included)."""
    missing = globals_read(sliced) - set(vars(module_of(sliced))) - set(dir(builtins))
    assert not missing, sorted(missing)
    broken = sliced.replace("def _nvmlCheckReturn(", "def _nvmlCheckReturn_gone(")
    assert "_nvmlCheckReturn" in globals_read(broken) - set(vars(module_of(broken))) - set(dir(builtins))


def test_nvml_errors_keep_their_classes_and_names(sliced):
    """The probe reports errors by class name (NVMLError_GpuIsLost): the slice makes the same ones."""
    module = module_of(sliced)
    codes = {name: getattr(pynvml, name) for name in dir(pynvml) if name.startswith("NVML_ERROR_")}
    assert len(codes) > 20
    for code in codes.values():
        assert type(module.NVMLError(code)).__name__ == type(pynvml.NVMLError(code)).__name__


def test_the_slice_is_a_small_part_of_pynvml(sliced):
    assert len(sliced) < len(FULL) / 8
    assert len(probe_payload.bundle()) < 20_000  # was 72 kB with the whole module


def test_slicing_keeps_original_text_and_order():
    source = ("import os\n# a comment\nA = 1\nB = A + 1\n\n@dec\ndef f():\n    return B\n"
              "def dec(fn):\n    return fn\ndef unused():\n    return os\nNVML_ERROR_X = 9\n")
    assert slice_module(source, {"f"}) == ("import os\nA = 1\nB = A + 1\n@dec\ndef f():\n    return B\n"
                                           "def dec(fn):\n    return fn\nNVML_ERROR_X = 9\n")


def test_the_bundle_runs_the_probe_on_this_machine(tmp_path):
    """End to end with the machine's own python3, as a host would run it (here without an NVIDIA driver)."""
    done = subprocess.run(["/bin/sh", "-c", probe_payload.command(str(tmp_path))], input=probe_payload.bundle(),
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    facts = parse_probe_output(done.stdout.decode())
    assert facts.system.disk_path == str(tmp_path)
    raw = json.loads(done.stdout)
    assert raw["nvml"].get("error") or raw["nvml"].get("gpus") is not None


def test_the_bundle_is_cached_by_its_inputs(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = probe_payload._cached_build()
    (cached,) = (tmp_path / "tritonops").glob("probe-*.b64")
    assert cached.read_bytes() == built == probe_payload.bundle()
    cached.write_bytes(b"stale")  # the same inputs read the file back: the name is their digest
    assert probe_payload._cached_build() == b"stale"


def test_known_hosts_is_read_once_and_again_when_it_changes(tmp_path):
    """One read for all the hosts of a run, each host's keys decoded from its own lines (plain or hashed,
    the first key of a type winning, as paramiko's lookup has it); a changed file (here a key removed) is
    never served stale."""
    import paramiko

    from tritonops.transport.host_keys import known_hosts_name
    from tritonops.transport.spec import ConnectionSpec
    from tritonops.transport.ssh import _client, _read_known_hosts

    key = paramiko.Ed25519Key.from_private_key_file(str(write_key(tmp_path)))
    other_key = paramiko.Ed25519Key.from_private_key_file(str(write_key(tmp_path / "second")))
    known = tmp_path / "known_hosts"
    hashed = paramiko.HostKeys.hash_host("10.0.0.3")
    known.write_text(f"[10.0.0.1]:2222 {key.get_name()} {key.get_base64()}\n"
                     f"10.0.0.2 {key.get_name()} {key.get_base64()}\n"
                     "# a comment\n|1|broken|entry ssh-ed25519 AAAA\nnot-a-line\n"
                     f"{hashed} {other_key.get_name()} {other_key.get_base64()}\n"
                     f"10.0.0.3,10.0.0.4 {key.get_name()} {key.get_base64()}\n")
    hashed_host = ConnectionSpec(name="c", host="10.0.0.3", known_hosts_file=str(known))
    assert _client(hashed_host, False).get_host_keys().lookup("10.0.0.3")[key.get_name()] == other_key  # first wins
    listed = ConnectionSpec(name="d", host="10.0.0.4", known_hosts_file=str(known))
    assert _client(listed, False).get_host_keys().lookup("10.0.0.4")[key.get_name()] == key
    read = _read_known_hosts[str(known)]
    assert _client(listed, False) and _read_known_hosts[str(known)] is read  # not read again
    spec = ConnectionSpec(name="a", host="10.0.0.1", port=2222, known_hosts_file=str(known))
    name = known_hosts_name("10.0.0.1", 2222)
    assert _client(spec, False).get_host_keys().lookup(name)[key.get_name()] == key
    other = ConnectionSpec(name="b", host="10.0.0.2", known_hosts_file=str(known))
    assert list(_client(other, False).get_host_keys().keys()) == ["10.0.0.2"]  # only its own host's keys
    known.write_text(f"10.0.0.2 {key.get_name()} {key.get_base64()}\n")
    assert _client(spec, False).get_host_keys().lookup(name) is None


def write_key(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path
