"""What `tritonops deploy` left on each host: its releases, the newest one's release.json and files,
and the weights folders, read over SSH (`tritonops status` does not list files). A lab helper for
./lab-demo (`python -m tritonops.lab releases -i inventory/lab.yml`); it changes nothing on the hosts.
The listing is a stdlib program run as an argument list over the run's SessionPool."""

from __future__ import annotations

import json
import posixpath
import shlex
from dataclasses import dataclass, field

from tritonops import host_programs
from tritonops.planning.door import serving_hosts
from tritonops.results import HostResult
from tritonops.transport.sessions import HostSession

LISTING = host_programs.source("lab_release_listing")  # host_programs/lab_release_listing.py


@dataclass
class HostReleases:
    host: str
    folder: str  # <root>/<deployment>
    releases: list[str] = field(default_factory=list)
    newest: dict | None = None  # its release.json
    files: list[str] = field(default_factory=list)  # the newest release's files, relative
    weights: list[str] = field(default_factory=list)  # <folder>/models/*
    error: str | None = None


def read_host(session: HostSession, folder: str) -> HostResult:
    out = session.transport.run(shlex.join(("python3", "-c", LISTING, folder)), timeout=60)
    if not out.ok:
        return HostResult(session.name, "failed", f"exit {out.exit_code}: {out.tail(2)}")
    listing = json.loads(out.stdout)
    found = HostReleases(session.name, folder, listing["releases"], listing["newest"], listing["files"],
                         [posixpath.join(folder, "models", name) for name in listing["models"]])
    return HostResult(session.name, "ok", "", found)


def describe(r: HostReleases) -> list[str]:
    if r.error:
        return [f"{r.host}: {r.error}"]
    if not r.releases:
        return [f"{r.host}: no release under {r.folder}/releases"]
    lines = [f"{r.host}: {len(r.releases)} release(s) under {r.folder}/releases, newest {r.releases[-1]}"]
    newest = r.newest or {}
    if newest.get("image_id"):
        lines.append(f"  image {newest['image_id'][:19]}  by {newest.get('who', '?')}")
    for model in newest.get("models", []):
        engine = model.get("engine") or {}
        lines.append(f"  {model.get('name')} v{model.get('version')}: {model.get('model')} on "
                     f"{engine.get('gpu_count', '?')} x {engine.get('gpu_name', '?')}: "
                     f"TP {engine.get('tensor_parallel_size')}, "
                     f"max_model_len {engine.get('max_model_len')}, {engine.get('dtype')}")
    lines += [f"  {path}" for path in r.files]
    lines += [f"  weights {path}" for path in r.weights]
    return lines


def main(argv: list[str] | None = None) -> int:
    import argparse

    from tritonops.inventory import load_inventory
    from tritonops.planning.deployment import deployment_dir
    from tritonops.transport.sessions import SessionPool

    parser = argparse.ArgumentParser(prog="python -m tritonops.lab releases",
                                     description="Each host's releases (what `tritonops deploy` left there).")
    parser.add_argument("-i", "--inventory", action="append", required=True, metavar="PATH")
    parser.add_argument("--limit", default="all", metavar="PATTERN")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    hosts = serving_hosts(load_inventory(args.inventory).select(args.limit))
    folders = {host.name: deployment_dir(host) for host in hosts}
    with SessionPool([host.connection for host in hosts]) as pool:
        results = pool.run(lambda session: read_host(session, folders[session.name]))
    found = [r.payload or HostReleases(r.host, folders[r.host], error=r.msg) for r in results]
    if args.json:
        print(json.dumps([r.__dict__ for r in found], indent=1))
    else:
        for r in found:
            print("\n".join(describe(r)))
    return 0 if found and all(r.releases and not r.error for r in found) else 1
