"""The lab's wheelhouse: a reproducible stand-in vllm wheel that pip installs from a PEP 503 index."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys

from tritonops.lab.wheelhouse import LAB_VLLM_VERSION, build_index, index_files, serve_local, wheel_bytes


def test_wheel_is_reproducible_and_versioned():
    assert wheel_bytes("0.10.2") == wheel_bytes("0.10.2")
    assert wheel_bytes("0.10.2") != wheel_bytes("0.11.0")


def test_index_links_carry_the_wheel_hash():
    files = index_files(("0.10.2",))
    sha = hashlib.sha256(files["packages/vllm-0.10.2-py3-none-any.whl"]).hexdigest()
    assert f"../../packages/vllm-0.10.2-py3-none-any.whl#sha256={sha}" in files["simple/vllm/index.html"].decode()
    assert b'href="vllm/"' in files["simple/index.html"]


def test_the_index_serves_third_party_wheels_under_their_pep_503_projects():
    names = ("ray-2.60.0-cp311-cp311-manylinux2014_x86_64.whl", "PyYAML-6.0.4-cp311-cp311-manylinux2014_x86_64.whl",
             "rpds_py-2026.9.1-cp311-cp311-manylinux2014_x86_64.whl")
    files = index_files(("0.10.2",), {name: name.encode() for name in names})
    for name, project in zip(names, ("ray", "pyyaml", "rpds-py")):
        sha = hashlib.sha256(name.encode()).hexdigest()
        assert f"../../packages/{name}#sha256={sha}" in files[f"simple/{project}/index.html"].decode()
        assert files[f"packages/{name}"] == name.encode()
        assert f'href="{project}/"'.encode() in files["simple/index.html"]


def test_the_stand_in_requires_no_ray_as_vllm_0_25_does_not():
    """vLLM 0.25's metadata names no Ray: a lab image carries it only where a cluster member's build adds it
    (tritonops_ray_requirement, tests/lab/test_ray_cluster_lab.py), exactly as a production image."""
    import io
    import zipfile
    metadata = zipfile.ZipFile(io.BytesIO(wheel_bytes("0.10.2"))).read("vllm-0.10.2.dist-info/METADATA").decode()
    assert metadata.startswith("Metadata-Version: 2.1\nName: vllm\n") and "Requires-Dist" not in metadata


def _pip(args, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, env=env, timeout=120)


def test_pip_installs_the_stand_in_through_the_index(tmp_path):
    url, stop = serve_local(build_index(tmp_path / "index", wheels={}))
    try:
        target = tmp_path / "site"
        # Ray (the stand-in's dependency, 80 MB) is installed by the lab's image builds (tests/lab), not here
        done = _pip(["install", "--index-url", url, "--no-deps", "--target", str(target), f"vllm=={LAB_VLLM_VERSION}"],
                    tmp_path)
        assert done.returncode == 0, done.stderr
        missing = _pip(["install", "--index-url", url, "--retries", "0", "--target", str(tmp_path / "x"),
                        "vllm==9.9.9"], tmp_path)
        assert missing.returncode != 0
        assert "No matching distribution found for vllm==9.9.9" in missing.stderr
    finally:
        stop()
    check = ("import dataclasses, vllm; from vllm.engine.arg_utils import AsyncEngineArgs as A, ASYNC_ENGINE_ARGS_KEYS as K\n"
             "assert vllm.__version__ == '0.10.2' and vllm.TRITONOPS_LAB_STAND_IN\n"
             "assert sorted(f.name for f in dataclasses.fields(A)) == sorted(K)\n"
             "assert 'enable_log_requests' in K and 'disable_log_requests' not in K\n"
             "try:\n    A(disable_log_requests=True)\nexcept TypeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                         env={"PYTHONPATH": str(target), "PATH": os.environ["PATH"]})
    assert out.returncode == 0, out.stderr
    assert "unexpected keyword argument 'disable_log_requests'" in out.stdout


def _end_servers_serving(directory) -> None:
    """This test's own index servers (their command line names its temporary folder), whatever the code under
    test recorded in server.pid."""
    import signal
    from pathlib import Path

    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if proc.name.isdigit() and str(directory).encode() in cmdline and b"http.server" in cmdline:
            os.kill(int(proc.name), signal.SIGKILL)


def test_the_index_started_on_a_host_answers_and_its_pid_file_names_the_server(tmp_path):
    """A lab host's index is started through its session: sshd runs the command with root's shell, bash (here
    on this machine, through pipes, as over SSH).
    The start was `cd D && setsid nohup python3 -m http.server ... &`: the whole `&&` list went to a background
    subshell that kept the session's output open for as long as the server ran, so the start always "timed out
    after 30s" and `lab up` said the index did not start (issue #45), and server.pid named that subshell, so
    stopping the index left the server running."""
    from pathlib import Path

    from tests.support.network import closed_port
    from tritonops.lab.wheelhouse import index_answers, index_url, serve_on_host, stop_on_host
    from tritonops.transport.local import LocalTransport
    from tritonops.waiting import wait_until

    class Bash(LocalTransport):
        def run(self, command, *, stdin=None, timeout=None):
            return super().run(f"exec bash -c {shlex.quote(command)}", stdin=stdin, timeout=timeout)

    here, port, directory = Bash("here"), closed_port(), tmp_path / "wheelhouse"
    try:
        assert serve_on_host(here, port, directory=str(directory), wheels={}) == index_url(port)
        pid = int((directory / "server.pid").read_text())
        assert b"http.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
        stop_on_host(here, str(directory))
        assert wait_until(lambda: not index_answers(here, port), timeout_s=10)
    finally:
        _end_servers_serving(directory)


def test_an_index_that_cannot_start_says_why_without_waiting_out_its_bound(tmp_path):
    import socket
    import time

    import pytest

    from tritonops.lab.wheelhouse import serve_on_host
    from tritonops.transport.local import LocalTransport

    with socket.socket() as taken:   # the port is someone else's (not an index): the server exits at once
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        started = time.monotonic()
        try:
            with pytest.raises(RuntimeError, match="Address already in use"):
                serve_on_host(LocalTransport("here"), taken.getsockname()[1], directory=str(tmp_path / "w"), wheels={})
        finally:
            _end_servers_serving(tmp_path / "w")
    assert time.monotonic() - started < 60   # not the bound given to a busy host's start (see serve_on_host)
