"""What `tritonops deploy` left on each host: its releases and the newest one's release.json, read
over SSH: every release's files, which `tritonops status` does not list. A lab helper for ./lab-demo
(`python -m tritonops.lab releases -i inventory/lab.yml`); it changes nothing on the hosts."""

from __future__ import annotations

import json
import posixpath
import shlex
from dataclasses import dataclass, field



@dataclass
class HostReleases:
    host: str
    folder: str  # <root>/<deployment>
    releases: list[str] = field(default_factory=list)
    newest: dict | None = None  # its release.json
    files: list[str] = field(default_factory=list)  # the newest release's files, relative
    weights: list[str] = field(default_factory=list)  # <folder>/models/*
    error: str | None = None


def _folder(host) -> str:
    from tritonops.deploy.run import deployment_of

    return posixpath.join(*deployment_of(host))


def read_host(host) -> HostReleases:
    from tritonops.transport.sessions import open_transport

    folder = _folder(host)
    result = HostReleases(host.name, folder)
    q = shlex.quote
    script = (f"cd {q(folder)} 2>/dev/null || exit 0; ls -1 releases 2>/dev/null | grep -v '^[.]' | sort; echo '--';"
              f" ls -1 models 2>/dev/null | grep -v '^[.]'; echo '--';"
              f" r=$(ls -1 releases 2>/dev/null | grep -v '^[.]' | sort | tail -n 1);"
              f" [ -n \"$r\" ] && (cd releases/\"$r\" && find . -type f | sort && echo '--' && cat release.json)")
    try:
        transport = open_transport(host.connection)
    except Exception as err:
        result.error = f"unreachable: {err}"
        return result
    try:
        out = transport.run(script, timeout=60)
    except Exception as err:
        result.error = f"{type(err).__name__}: {err}"
        return result
    finally:
        transport.close()
    if not out.ok:
        result.error = f"exit {out.exit_code}: {out.stderr.strip()[-300:]}"
        return result
    parts = out.stdout.split("--\n", 3) + ["", "", "", ""]
    result.releases = parts[0].split()
    result.weights = [posixpath.join(folder, "models", name) for name in parts[1].split()]
    result.files = [line[2:] for line in parts[2].splitlines() if line.startswith("./")]
    if parts[3].strip():
        try:
            result.newest = json.loads(parts[3])
        except ValueError:
            result.error = "release.json is not JSON"
    return result


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

    parser = argparse.ArgumentParser(prog="python -m tritonops.lab releases",
                                     description="Each host's releases (what `tritonops deploy` left there).")
    parser.add_argument("-i", "--inventory", action="append", required=True, metavar="PATH")
    parser.add_argument("--limit", default="all", metavar="PATTERN")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    hosts = load_inventory(args.inventory).select(args.limit)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(read_host, hosts))
    if args.json:
        print(json.dumps([r.__dict__ for r in found], indent=1))
    else:
        for r in found:
            print("\n".join(describe(r)))
    return 0 if found and all(r.releases and not r.error for r in found) else 1
