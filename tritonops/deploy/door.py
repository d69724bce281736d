"""After a deploy: every balancer's door (issues #31, #41). Each host of `tritonops_balancers` — whatever --limit
selects, as Ansible's `delegate_to` reaches a host outside the play — gets, for each deployment the run touched,
HAProxy in front of every replica of every host that serves that deployment: the run's own hosts and, read-only,
the inventory's others, each at the release that serves on it (read back from `release.json`, never from
variables: a rolled-back host is balanced at the release it went back to). A --limit never shrinks a door: it
loses a host's replicas only when that host's current release serves fewer (said: "s1: 4 → 2 replicas").

A host that cannot be read keeps the servers the door's file has for it now; when the file cannot say them (no
such servers, or no gRPC port for a door that now has gRPC), that deployment's door is left as it was.

The files are checked by `haproxy -c` on the balancer before anything live changes, then haproxy starts or reloads
hitlessly (host_programs/door_apply.py). In --check, nothing changes: each balancer's result says what its doors
would become (servers added, removed, re-addressed; with --diff the files' unified diff) and which replicas the run
would drain first.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping, Sequence

from tritonops.door.program import ARGV, CONFIG_DIR, PREFIX_KEY, DoorApplied, read_answer, request
from tritonops.deploy.run import Record
from tritonops.deploy.served import read_current
from tritonops.errors import InputError, TritonopsError
from tritonops.facts.queries import FileQuery
from tritonops.facts.query_program import read_facts
from tritonops.modes.kserve import KSERVE
from tritonops.planning.door import Door, ServedHost, balancer_config, balancer_globals, door, served_host
from tritonops.planning.deployment import deployment_of
from tritonops.planning.door_change import door_change, door_servers, file_diff, kept_host
from tritonops.render.door_config import GLOBALS_FILE, PREFIX, deployment_file, render_balancer_files
from tritonops.results import HostResult
from tritonops.transport.sessions import HostSession, SessionPool

TASK = "door"
DEFAULT_CAPACITY = 256  # a release that did not record its engines' max_num_seqs (made before the door)
APPLY_TIMEOUT_S = 300   # installing haproxy on a fresh balancer included


def update_doors(pool: SessionPool, balancers, fleet, record: Record, *, check: bool = False, diff: bool = False,
                 planned: Mapping[str, ServedHost] | None = None,
                 draining: Mapping[str, Sequence[str]] | None = None) -> None:
    """Each balancer gets a result (task "door"). `fleet`: every serving host of the deployments to balance (the
    run's and the others of the inventory); `planned`: in --check, what the run's changed hosts would serve
    (their releases do not exist yet); `draining`: in --check, each host's servers the run would drain."""
    if not balancers:
        return
    doors: dict[str, Door] = {}
    for host in balancers:
        try:
            doors[host.name] = door(host)
        except InputError as err:
            record(HostResult(host.name, "failed", str(err), task=TASK))
    if not doors:
        return
    planned = dict(planned or {})
    groups: dict[str, list] = {}
    for host in fleet:
        groups.setdefault(deployment_of(host)[1], []).append(host)
    unread = [host for host in fleet if host.name not in planned]
    served = read_current(pool, unread, TASK) if unread else {}
    hosts_of: dict[str, list[ServedHost]] = {}   # deployment -> its hosts as they serve
    unreadable: dict[str, list[tuple[str, str]]] = {}  # deployment -> (host, why) of hosts that could not be read
    notes: list[str] = []
    for deployment, members in groups.items():
        hosts_of[deployment] = []
        for host in members:
            if host.name in planned:
                hosts_of[deployment].append(planned[host.name])
                continue
            found = served[host.name]
            if not found.ok:
                unreadable.setdefault(deployment, []).append((host.name, found.msg))
                continue
            release = found.payload
            if release is None:
                continue
            if release.serve is None:
                notes.append(f"{deployment}: {host.name}'s release {release.id} records no serve settings (made "
                             "by an older tritonops): redeploy it to balance it")
                continue
            if release.serve.replicas:  # none: a pipeline's worker (Triton runs on the head)
                hosts_of[deployment].append(served_host(host, release.serve, release.capacity or DEFAULT_CAPACITY))

    def apply(session: HostSession) -> HostResult:
        settings = doors[session.name]
        names = [deployment_file(deployment) for deployment in groups]
        paths = {name: posixpath.join(CONFIG_DIR, name) for name in [GLOBALS_FILE, *names]}
        queries = [FileQuery(path, content=True) for path in paths.values()]
        read = read_facts(session.transport, queries)
        now = {name: read.file(path).text if read.file(path).kind == "file" else None for name, path in paths.items()}
        configs, remove, said, left, drains = [], [], [], [], []
        for deployment in groups:
            name = deployment_file(deployment)
            before = door_servers(now[name], deployment)
            for host in groups[deployment]:  # only what this door has now can be drained
                if servers := [s for s in (draining or {}).get(host.name, ()) if s in before]:
                    drains.append(f"would drain {', '.join(servers)} before {host.name}'s replicas restart")
            hosts = list(hosts_of[deployment])
            mode = hosts[0].mode if hosts else KSERVE
            kept = []
            for host, why in unreadable.get(deployment, []):
                keep = kept_host(before, host, mode, settings.grpc_port is not None)
                if keep is None and any(server.host == host for server in before.values()):
                    left.append(deployment)
                    said.append(f"{deployment}: {host} could not be read ({why}); its door is left as it was")
                    break
                if keep is not None:
                    kept.append(keep)
                    said.append(f"{deployment}: {host} could not be read ({why}); its {len(keep.replicas)} "
                                "replica(s) stay as the door has them")
            if deployment in left:
                continue
            hosts += kept
            if not hosts:
                if now[name] is not None:
                    remove.append(name)
                    said.append(f"{deployment}: no host serves it, no door")
                continue
            config = balancer_config(deployment, settings, hosts)
            configs.append(config)
            change = door_change(before, config, grpc=config.grpc_port is not None)
            grpc = f", gRPC :{config.grpc_port}" if config.grpc_port else ""
            said.append(f"{deployment}: {len(config.replicas)} replica(s) behind :{config.http_port}{grpc}"
                        f"{' (TLS)' if config.tls_pem else ''}{' (API keys)' if config.keys_file else ''}"
                        f"{' (by prompt prefix)' if config.routing == PREFIX else ''}"
                        + "".join(f"; {line}" for line in change.lines()))
        scripts = [PREFIX_KEY] if any(c.routing == PREFIX for c in configs) else []
        try:
            files = render_balancer_files(balancer_globals(next(h for h in balancers if h.name == session.name),
                                                           tuple(script.path for script in scripts)), configs)
        except InputError as err:
            return HostResult(session.name, "failed", str(err), task=TASK)
        if check:
            diffs = [file_diff(name, now.get(name), text) for name, text in files.items()]
            diffs += [file_diff(name, now.get(name), None) for name in remove]
            changed = any(diffs)
            return HostResult(session.name, "changed" if changed else "ok",
                              "; ".join(said + notes + drains + ([] if changed else ["unchanged"])),
                              task=TASK, diff=("".join(diffs) or None) if diff else None)
        keys = [settings.keys_file] if settings.keys_file and configs else []
        body = request(files, remove=remove, keys_files=keys, scripts=scripts)
        result = session.transport.run(shlex.join(ARGV), stdin=body, timeout=APPLY_TIMEOUT_S)
        try:
            applied: DoorApplied = read_answer(result.exit_code, result.stdout, result.stderr)
        except TritonopsError as err:
            return HostResult(session.name, "failed", f"{err} ({'; '.join(said)})", task=TASK)
        extra = [f"HAProxy {applied.version} {applied.action}"]
        if applied.installed:
            extra.append("installed")
        if applied.keys_created:
            extra.append(f"made a new API key in {', '.join(applied.keys_created)} (0600; read it there)")
        return HostResult(session.name, "changed" if applied.changed else "ok",
                          "; ".join(said + notes + extra), applied, task=TASK)

    for result in pool.run(apply, list(doors), task=TASK):
        record(result)
