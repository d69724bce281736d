"""After a deploy: every balancer's door (issue #31). The hosts of `tritonops_balancers` get, for each deployment
the run served, HAProxy in front of every replica the serving hosts' current releases placed (read back from the
hosts, like the Prometheus targets: a rolled-back host is balanced at the release that serves). The files are
checked by `haproxy -c` on the balancer before anything live changes, then haproxy starts or reloads hitlessly
(host_programs/door_apply.py). Not in --check.

A deployment one of whose serving hosts could not be read keeps the door it had: balancing only the hosts that
answered would take the others out of service.
"""

from __future__ import annotations

import shlex

from tritonops.balancer.door_program import ARGV, DoorApplied, read_answer, request
from tritonops.deploy.run import Record
from tritonops.deploy.served import read_current
from tritonops.errors import InputError, TritonopsError
from tritonops.modes.choice import mode_of_release
from tritonops.planning.balancer import Door, ServedHost, balancer_config, balancer_globals, door, served_host
from tritonops.planning.deployment import deployment_of
from tritonops.render.haproxy_config import deployment_file, render_balancer_files
from tritonops.results import HostResult
from tritonops.transport.sessions import HostSession, SessionPool

TASK = "door"
DEFAULT_CAPACITY = 256  # a release that did not record its engines' max_num_seqs (made before the door)
APPLY_TIMEOUT_S = 300   # installing haproxy on a fresh balancer included


def update_doors(pool: SessionPool, serving, balancers, record: Record) -> None:
    """Each balancer gets a result (task "door")."""
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
    groups: dict[str, list] = {}
    for host in serving:
        groups.setdefault(deployment_of(host)[1], []).append(host)
    served = read_current(pool, serving, TASK) if serving else {}
    planned: dict[str, list[ServedHost] | None] = {}  # deployment -> its served hosts; None: leave its door
    notes: list[str] = []
    for deployment, members in groups.items():
        hosts: list[ServedHost] | None = []
        for host in members:
            found = served[host.name]
            if not found.ok:
                notes.append(f"{deployment}: {host.name} could not be read ({found.msg}); its door is left as it was")
                hosts = None
                break
            release = found.payload
            replicas = (release.serve or {}).get("replicas") if release else None
            if release is None:
                continue
            if not replicas:
                notes.append(f"{deployment}: {host.name}'s release {release.id} records no replicas (made before "
                             "tritonops placed them): redeploy it to balance it")
                continue
            hosts.append(served_host(host, replicas, release.capacity or DEFAULT_CAPACITY,
                                     mode_of_release(release.serve)))
        planned[deployment] = hosts

    def apply(session: HostSession) -> HostResult:
        settings = doors[session.name]
        configs, remove, said = [], [], []
        for deployment, hosts in planned.items():
            if hosts is None:
                continue
            if not hosts:
                remove.append(deployment_file(deployment))
                said.append(f"{deployment}: no host serves it, no door")
                continue
            config = balancer_config(deployment, settings, hosts)
            configs.append(config)
            grpc = f", gRPC :{config.grpc_port}" if config.grpc_port else ""
            said.append(f"{deployment}: {len(config.replicas)} replica(s) behind :{config.http_port}{grpc}"
                        f"{' (TLS)' if config.tls_pem else ''}{' (API keys)' if config.keys_file else ''}")
        try:
            files = render_balancer_files(balancer_globals(next(h for h in balancers if h.name == session.name)),
                                          configs)
        except InputError as err:
            return HostResult(session.name, "failed", str(err), task=TASK)
        keys = [settings.keys_file] if settings.keys_file and configs else []
        body = request(files, remove=remove, keys_files=keys)
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
