"""A PEP 503 simple index of the lab's wheels, and serving it (on a lab host, or locally).

Layout: simple/index.html, simple/<project>/index.html (links with #sha256=), packages/*.whl.
Python's http.server serves it: directories answer with their index.html.
"""

from __future__ import annotations

import hashlib
import html
import shlex
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Mapping
from pathlib import Path

from tritonops.lab.wheelhouse.ray_wheels import project_of, ray_wheels
from tritonops.lab.wheelhouse.wheel import wheel_bytes, wheel_name
from tritonops.tarball import tar_bytes
from tritonops.waiting import GaveUp, wait_until

LAB_VLLM_VERSION = "0.10.2"  # the pin the lab's inventory uses (vLLM of NGC 25.10)
INDEX_DIR = "/opt/tritonops-lab/wheelhouse"


def index_files(versions: tuple[str, ...] = (LAB_VLLM_VERSION,),
                wheels: Mapping[str, bytes] | None = None) -> dict[str, bytes]:
    """Relative path -> content of the whole index (pure): the stand-in vllm in `versions`, and
    `wheels` (file name -> bytes: real Ray and its dependencies, ray_wheels.py) under their projects."""
    files: dict[str, bytes] = {}
    projects: dict[str, list[str]] = {}
    packages = {wheel_name(version): wheel_bytes(version) for version in versions}
    packages.update(wheels or {})
    for name, data in sorted(packages.items()):
        files[f"packages/{name}"] = data
        sha = hashlib.sha256(data).hexdigest()
        projects.setdefault(project_of(name), []).append(
            f'<a href="../../packages/{html.escape(name)}#sha256={sha}">{html.escape(name)}</a><br/>')
    page = "<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" content=\"1.0\">" \
           "<title>Links for {0}</title></head><body>\n<h1>Links for {0}</h1>\n{1}\n</body></html>\n"
    for project, links in sorted(projects.items()):
        files[f"simple/{project}/index.html"] = page.format(html.escape(project), "\n".join(links)).encode()
    listing = "\n".join(f'<a href="{html.escape(p)}/">{html.escape(p)}</a>' for p in sorted(projects))
    files["simple/index.html"] = ("<!DOCTYPE html>\n<html><head><meta name=\"pypi:repository-version\" "
                                  "content=\"1.0\"><title>Simple index</title></head><body>\n"
                                  f"{listing}\n</body></html>\n").encode()
    return files


def lab_wheels() -> dict[str, bytes]:
    """The third-party wheels every lab index serves: real Ray, which the stand-in vllm requires."""
    from tritonops.lab.defaults import default_cache_dir

    return ray_wheels(default_cache_dir())


def build_index(root: Path | str, versions: tuple[str, ...] = (LAB_VLLM_VERSION,),
                wheels: Mapping[str, bytes] | None = None) -> Path:
    root = Path(root)
    for rel, data in index_files(versions, wheels).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def index_url(port: int) -> str:
    """The index as the host (and a build container on the host's network) sees it."""
    return f"http://127.0.0.1:{int(port)}/simple"


STAMP = ".tritonops-index-stamp"


def index_stamp(versions: tuple[str, ...] = (LAB_VLLM_VERSION,), wheels: Mapping[str, bytes] | None = None) -> str:
    """A digest of the index's files: the served index is current when the host's stamp equals it."""
    import hashlib

    digest = hashlib.sha256()
    for name, data in sorted(index_files(versions, wheels).items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def index_is_current(transport, directory: str = INDEX_DIR, versions: tuple[str, ...] = (LAB_VLLM_VERSION,),
                     wheels: Mapping[str, bytes] | None = None) -> bool:
    """Whether the host serves this index (`wheels` None: the lab's, lab_wheels())."""
    result = transport.run(shlex.join(("cat", f"{directory}/{STAMP}")), timeout=10)
    return result.ok and result.stdout.strip() == index_stamp(versions, lab_wheels() if wheels is None else wheels)


def index_answers(transport, port: int) -> bool:
    """Whether the index on the host's 127.0.0.1:<port> serves the vllm project page."""
    probe = ("python3 -c 'import sys,urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2).read()' "
             f"{shlex.quote(index_url(port) + '/vllm/')}")
    return transport.run(probe, timeout=10).ok


# How long a started index may take to answer: python3 starting http.server on a lab host whose 2 cores other
# labs' builds keep busy. The wait ends when the index answers (or its server exits), not after a fixed time.
INDEX_START_S = 120.0


def start_command(directory: str, port: int) -> str:
    """The shell command that starts the index server in the background and records its pid. Only the server
    goes to the background (not `cd D && server &`, whose whole list would: bash's subshell then holds the SSH
    session's output until the server exits, so the start "times out", and `$!` names that subshell); setsid
    takes it out of the session; its output goes to server.log."""
    d = shlex.quote(directory)
    return (f"setsid nohup python3 -m http.server {int(port)} --bind 127.0.0.1 --directory {d} "
            f">{d}/server.log 2>&1 </dev/null & echo $! > {d}/server.pid")


def serve_on_host(transport, port: int, versions: tuple[str, ...] = (LAB_VLLM_VERSION,),
                  directory: str = INDEX_DIR, timeout_s: float = INDEX_START_S,
                  wheels: Mapping[str, bytes] | None = None) -> str:
    """Copy the index to a lab host and serve it on the host's 127.0.0.1:<port>; returns the
    index URL as the host (and a build container on the host's network) sees it, once the index answers
    (RuntimeError with the server's log if it exits first, or does not answer within `timeout_s`). `wheels`
    None: the lab's third-party wheels (lab_wheels(): real Ray, which the stand-in requires)."""
    d = shlex.quote(directory)
    stop_on_host(transport, directory)
    wheels = lab_wheels() if wheels is None else wheels
    files = index_files(versions, wheels)
    files[STAMP] = index_stamp(versions, wheels).encode()
    result = transport.run(f"rm -rf {d} && mkdir -p {d} && tar -xf - -C {d}", stdin=tar_bytes(files), timeout=180)
    if not result.ok:
        raise RuntimeError(f"copying the wheelhouse to {transport.name} failed: {result.tail()}")
    result = transport.run(start_command(directory, port), timeout=30)
    if not result.ok:
        raise RuntimeError(f"starting the index on {transport.name} failed: {result.tail()}")
    url = index_url(port)

    def exited() -> str | None:
        alive = transport.run(f"kill -0 $(cat {d}/server.pid) 2>/dev/null", timeout=30).ok
        return None if alive else "its server exited"

    try:
        if wait_until(lambda: index_answers(transport, port), timeout_s=timeout_s, interval_s=0.3,
                      max_interval_s=2.0, stop=exited):
            return url
        why = f"did not answer within {timeout_s:g} s"
    except GaveUp as gave_up:
        why = str(gave_up)
    log = " / ".join(transport.run(f"tail -n 3 {d}/server.log", timeout=30).stdout.strip().splitlines())
    raise RuntimeError(f"the index on {transport.name}:{port} {why}: {log or 'server.log is empty'}")


def stop_on_host(transport, directory: str = INDEX_DIR) -> None:
    d = shlex.quote(directory)
    transport.run(f"[ -f {d}/server.pid ] && kill $(cat {d}/server.pid) 2>/dev/null; rm -f {d}/server.pid; true",
                  timeout=30)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - http.server's signature
        pass


def serve_local(root: Path | str, host: str = "127.0.0.1", port: int = 0):
    """Serve an index directory from a thread here; returns (index URL, stop())."""
    server = ThreadingHTTPServer((host, port), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return f"http://{host}:{server.server_address[1]}/simple", stop
