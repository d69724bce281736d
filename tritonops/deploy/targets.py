"""After a deploy: the Prometheus file_sd targets file (and the alerting rules next to it) that the
inventory names in `tritonops_prometheus_file_sd`, on the controller. Not in --check.

What each host serves is read from the host once the run is over (its `current` release and the
models in that release's release.json, like `status` does), so a host whose new release was rolled
back is listed with the release that serves, and a no-op redeploy lists the same release as before.
A host that cannot be read keeps its earlier group; a host that serves nothing loses it. Hosts of
other deployments, and hosts the run did not select (`--limit`), keep theirs. The file is replaced
atomically (written beside it, then renamed) under an flock, so two deploys sharing it do not lose
each other's hosts.

Each balancer (`tritonops_balancers`) with the variable set is a group of its own: HAProxy's Prometheus exporter
(:8405, where it binds: the balancer's private address), labelled `role: balancer`, the deployments the run gives doors to and its queue timeout. The alerting rules
are rendered from the file's groups once merged (a queue-time rule for each queue timeout its balancers carry).
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from typing import Iterator

from tritonops.deploy.run import DeployReport, Record
from tritonops.deploy.served import read_current
from tritonops.errors import InputError
from tritonops.metrics.rules import RULES_FILE, render_rules
from tritonops.metrics.targets import (BalancerTarget, HostTarget, merged_groups, queue_timeouts, read_targets,
                                       render_targets, scrape_address)
from tritonops.planning.door import BIND_VAR, door, exporter_bind
from tritonops.planning.bind import replica_bind
from tritonops.planning.deployment import deployment_of
from tritonops.render.door_config import BalancerGlobals
from tritonops.results import HostResult
from tritonops.transport.sessions import SessionPool
from tritonops.values.numbers import whole_number

FILE_VAR = "tritonops_prometheus_file_sd"
ADDRESS_VAR = "tritonops_metrics_address"
TASK = "targets"


def write_targets(pool: SessionPool, hosts, report: DeployReport, record: Record, balancers=(), *,
                  behind_balancer: bool = False) -> None:
    """Each of the run's hosts and balancers with `tritonops_prometheus_file_sd` set gets a result (task
    "targets"); what each host serves is read through the run's own sessions (a balancer is not read).
    `behind_balancer`: the inventory has balancers, so the hosts' metrics ports are bound to their private
    addresses (planning.bind) and scraped there."""
    where, doors = {}, {}
    deployments = tuple(sorted({deployment_of(host)[1] for host in hosts}))
    for host in hosts:  # every value checked before a host is read; a bad one fails that host's result only
        if host.vars.get(FILE_VAR):
            try:
                where[host.name] = _settings(host, behind_balancer)
            except InputError as err:
                record(HostResult(host.name, "failed", str(err), task=TASK))
    for host in balancers:
        if host.vars.get(FILE_VAR):
            try:
                doors[host.name] = _balancer_target(host, deployments)
            except InputError as err:
                record(HostResult(host.name, "failed", str(err), task=TASK))
    hosts = [host for host in hosts if host.name in where]
    if not hosts and not doors:
        return
    gpus = {result.host: result.payload for result in report.phases
            if result.task == "facts" and result.ok and result.payload is not None}
    served = _read_served(pool, hosts) if hosts else {}
    by_file: dict[str, list] = {}
    for host in hosts:
        by_file.setdefault(where[host.name]["file"], []).append(host)
    for path, _ in doors.values():  # a file only balancers name
        by_file.setdefault(path, [])
    for path, members in by_file.items():
        targets: list = []
        replaced, notes = [], {}
        balancer_targets = [target for file, target in doors.values() if file == path]
        for host in members:
            settings, found = where[host.name], served[host.name]
            if not found.ok:
                notes[host.name] = (found.status, f"{found.msg}; its earlier target (if any) is kept")
                continue
            replaced.append((settings["deployment"], host.name))
            current, models, replica_ports, worker = found.payload
            if current is None:
                notes[host.name] = ("ok", f"serves no release: not a target in {path}")
                continue
            if worker:
                notes[host.name] = ("ok", f"a pipeline's worker (Triton runs on its head): not a target in {path}")
                continue
            gpu_type, count = _gpus(gpus.get(host.name))
            ports = replica_ports or (settings["port"],)  # the release's placement, else the host's port
            targets.append(HostTarget(host.name, settings["address"], ports[0], settings["deployment"],
                                      current, tuple(models), gpu_type, count, tuple(ports[1:])))
        merged: list[dict] = []  # the file's groups once merged: the rules follow its balancers' queue timeouts

        def targets_file(text: str) -> str:
            merged[:] = merged_groups(read_targets(text, path), replaced, targets + balancer_targets,
                                      [target.host for target in balancer_targets])
            return render_targets(merged)

        try:
            changed = _replace(path, targets_file)
            changed |= _replace(os.path.join(os.path.dirname(path), RULES_FILE),
                                lambda _: render_rules(queue_timeouts_ms=queue_timeouts(merged)))
        except (InputError, OSError) as err:  # the deploy itself is done: said per host, not raised
            why = str(err) if isinstance(err, InputError) else f"{path}: cannot write: {err.strerror or err}"
            for name in [host.name for host in members] + [target.host for target in balancer_targets]:
                record(HostResult(name, "failed", why, task=TASK))
            continue
        for target in targets:
            record(HostResult(target.host, "changed" if changed else "ok",
                              f"{', '.join(target.group()['targets'])} ({target.release}) in {path}", task=TASK))
        for balancer in balancer_targets:
            record(HostResult(balancer.host, "changed" if changed else "ok",
                              f"{', '.join(balancer.group()['targets'])} (HAProxy's exporter, "
                              f"{balancer.group()['labels']['deployment']}) in {path}", task=TASK))
        for name, (status, msg) in notes.items():
            record(HostResult(name, status, msg, task=TASK))


def _settings(host, behind_balancer: bool) -> dict:
    def at(name):
        return host.setting(name).where if name in host.history else None

    path = _file(host)
    port = whole_number(host.vars.get("tritonops_metrics_port", 8002), "tritonops_metrics_port",
                        at("tritonops_metrics_port"), minimum=1, maximum=65535)
    override = host.vars.get(ADDRESS_VAR) or None
    address = scrape_address(host.name, host.connection.host, replica_bind(host, behind_balancer),
                             override, at(ADDRESS_VAR) if override else at("tritonops_bind_address"))
    return {"file": path, "port": port, "address": address, "deployment": deployment_of(host)[1]}


def _balancer_target(host, deployments: tuple[str, ...]) -> tuple[str, BalancerTarget]:
    """(the targets file, the balancer's group): its exporter at `tritonops_metrics_address`, else where it binds
    (planning.balancer.exporter_bind: the balancer's private address), else, bound to every address, ansible_host."""
    def at(name):
        return host.setting(name).where if name in host.history else None

    path = _file(host)
    override = host.vars.get(ADDRESS_VAR) or None
    address = scrape_address(host.name, host.connection.host, exporter_bind(host), override,
                             at(ADDRESS_VAR) if override else at(BIND_VAR))
    return path, BalancerTarget(host.name, address, BalancerGlobals().metrics_port,
                                deployments or (deployment_of(host)[1],), door(host).queue_timeout_ms)


def _file(host) -> str:
    path = os.path.expanduser(str(host.vars[FILE_VAR]))
    if not os.path.isabs(path) or not path.endswith(".json") or any(c in path for c in "\n\0"):
        where = host.setting(FILE_VAR).where if FILE_VAR in host.history else None
        raise InputError(f"{FILE_VAR} must be an absolute path ending in .json (Prometheus file_sd), not {path!r}",
                         where)
    return os.path.normpath(path)


def _read_served(pool: SessionPool, hosts):
    """host -> result whose payload is (current release or None, its Triton model names, its replicas' metrics
    ports: none for a release made before replicas, whether it is a pipeline's worker: no Triton there)."""
    read = {}
    for name, result in read_current(pool, hosts, TASK).items():
        release = result.payload if result.ok else None
        if result.ok:
            serve = release.serve if release else None
            models = serve.models if serve else release.models if release else ()
            mode = release.mode if release else None  # its metrics page: openai, the OpenAI port
            ports = tuple(mode.endpoints(r.ports)[mode.metrics().port] for r in serve.replicas) if serve else ()
            worker = bool(serve and serve.cluster and serve.cluster.worker)  # no Triton there
            result = HostResult(name, "ok", "", (release.id if release else None, models, ports, worker))
        read[name] = result
    return read


def _gpus(facts) -> tuple[str, int]:
    found = list(facts.nvidia.gpus) if facts is not None and facts.nvidia and facts.nvidia.gpus else []
    return (found[0].name if found else "", len(found))


def _replace(path: str, render) -> bool:
    """Write render(old text) to `path` atomically when it differs; True when it changed."""
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    with _locked(path + ".lock"):
        try:
            with open(path, encoding="utf-8") as handle:
                old = handle.read()
        except FileNotFoundError:
            old = None
        new = render(old or "")
        if new == old:
            return False
        handle, partial = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(new)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(partial, 0o644)
            os.replace(partial, path)
        except BaseException:
            if os.path.exists(partial):
                os.unlink(partial)
            raise
        return True


@contextmanager
def _locked(path: str) -> Iterator[None]:
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
