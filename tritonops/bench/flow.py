"""`tritonops bench`: aiperf from the controller against one deployment, level by level, its exports kept with
tritonops' summary under the bench root (bench/store.py), keyed by deployment and release.

Where requests go comes from the current releases (their placement, read back from the hosts like status does)
and the balancers' door settings: a balancer's door when the deployment has one, else every replica (aiperf sends
round robin over their URLs). Before any load, each endpoint must answer /v2/health/ready: one that does not is
the one-line error (exit 4), nothing is sent. The servers' metrics (each replica's :8002, read on the hosts
through SSH, reading/metrics.py) are read before and after each level for Triton's queue and compute time.
"""

from __future__ import annotations

import importlib.util
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from tritonops.bench import store, tokenizer
from tritonops.bench.runner import aiperf_command, run_aiperf
from tritonops.errors import InputError, TritonopsError, one_line
from tritonops.exit_codes import ExitCode
from tritonops.modes.base import ServingMode
from tritonops.modes.choice import host_ports
from tritonops.modes.kserve import KSERVE
from tritonops.bench.plan import (Endpoint, KSERVE_TEMPLATE, Workload, aiperf_argv, check_workload,
                                      door_endpoints, release_key, replica_endpoints)
from tritonops.bench.results import (BenchSummary, Comparison, LevelResult, aiperf_version, compare,
                                              comparable, level_from_aiperf, previous_run, server_times,
                                              DEFAULT_THRESHOLD)
from tritonops.planning.deployment import deployment_of
from tritonops.planning.entries import host_where, model_entries
from tritonops.playbook.inputs import RunInputs
from tritonops.reading.metrics import fetch_metrics
from tritonops.reading.sessions import ReadOptions
from tritonops.serving.releases import ReleaseRecord, read_deployed
from tritonops.text import close_matches
from tritonops.transport.sessions import HostSession, SessionPool
from tritonops.values.numbers import whole_number

READY_TIMEOUT_S = 5
AIPERF_JSON = "profile_export_aiperf.json"


class BenchUnreachable(TritonopsError):
    exit_code = ExitCode.HOST_UNREACHABLE


class BenchFailed(TritonopsError):
    exit_code = ExitCode.HOST_FAILED


@dataclass(frozen=True)
class BenchRequest:
    workload: Workload                 # its model "" : the one model the release serves
    through: str | None = None         # "balancer" / "replicas"; None: the balancer when there is one
    compare_to: str | None = "previous"  # a release id, "previous" (the last other release benched), None
    threshold: float = DEFAULT_THRESHOLD
    tokenizer_dir: str | None = None   # a local folder; None: the controller's copy or fetched from a host
    plots: bool = True


@dataclass(frozen=True)
class BenchReport:
    summary: BenchSummary
    run_dir: Path
    plots: tuple[Path, ...] = ()
    comparison: Comparison | None = None
    compared: BenchSummary | None = None


@dataclass(frozen=True)
class Fleet:
    """What one deployment serves now, as read from its hosts."""
    deployment: str
    releases: dict[str, ReleaseRecord]   # serving host -> its current release
    endpoints: tuple[Endpoint, ...]
    through: str
    model: str
    api_key: str | None
    mode: ServingMode = KSERVE            # how the current releases serve (tritonops_frontend when deployed)


def run_bench(inputs: RunInputs, options: ReadOptions, request: BenchRequest,
              root: Path | None = None) -> BenchReport:
    workload = check_workload(request.workload)
    aiperf = aiperf_command()  # before any host is contacted: a missing aiperf is said at once
    if request.plots and importlib.util.find_spec("matplotlib") is None:  # before aiperf runs, not after
        raise InputError("the bench's plots need matplotlib, which is not installed: pip install 'tritonops[bench]'"
                         " (or bench with --no-plots)", "--no-plots")
    root = root or store.bench_root()
    hosts = list(inputs.hosts)
    if not hosts:
        raise InputError("no serving host selected (--limit)")
    deployments = {deployment_of(host)[1] for host in hosts}
    if len(deployments) > 1:
        raise InputError(f"the hosts serve several deployments ({', '.join(sorted(deployments))}): bench one "
                         "at a time (--limit)")
    deployment = deployments.pop()
    balancers = [h for h in inputs.balancers if deployment_of(h)[1] == deployment]
    with SessionPool([h.connection for h in hosts + balancers], forks=options.forks,
                     accept_new_host_keys=options.accept_new_host_keys) as pool:
        fleet = read_fleet(pool, hosts, balancers, deployment, workload.model, request.through)
        workload = replace(workload, model=fleet.model, mode=fleet.mode.name)
        for endpoint in fleet.endpoints:
            check_ready(endpoint, fleet.mode)
        tokenizer_dir = request.tokenizer_dir or tokenizer_for(pool, root, hosts, fleet)
    summary, run_dir = measure(fleet, workload, tokenizer_dir, root, aiperf,
                               lambda: _server_figures(inputs, options))
    comparison, other = None, None
    if request.compare_to:
        other = _other_run(root, deployment, summary, request.compare_to)
        if other is not None:
            comparison = compare(summary, other, request.threshold)
    plots: tuple[Path, ...] = ()
    if request.plots:
        from tritonops.bench.plots import write_plots
        plots = tuple(write_plots(run_dir, summary, other))
    return BenchReport(summary, run_dir, plots, comparison, other)


def measure(fleet: Fleet, workload: Workload, tokenizer_dir: str, root: Path, aiperf: list[str],
            server_figures: Callable[[], list] | None = None) -> tuple[BenchSummary, Path]:
    """aiperf level by level against the fleet's endpoints, its exports and tritonops' summary kept in a new run
    folder under `root`, filed under the fleet's release. `server_figures`: every replica's model figures, read
    before and after each level for the servers' queue and compute times (None: left out)."""
    release = release_key({name: r.id for name, r in fleet.releases.items()})
    run_dir = store.new_run_dir(root, fleet.deployment, release)
    template = run_dir / "kserve_payload.json.j2"
    if workload.mode == "kserve":
        template.write_text(KSERVE_TEMPLATE)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    levels, version = [], ""
    for concurrency in workload.concurrency:
        level_dir = run_dir / f"c{concurrency}"
        level_dir.mkdir()
        before = server_figures() if server_figures else []
        argv = aiperf_argv(aiperf, [e.url for e in fleet.endpoints], workload, concurrency, tokenizer_dir,
                           str(template), str(level_dir))
        ran = run_aiperf(argv, level_dir, workload.time_bound_s(concurrency), fleet.api_key)
        after = server_figures() if server_figures else []
        export = level_dir / AIPERF_JSON
        if ran.timed_out:
            raise BenchFailed(f"aiperf ran past {workload.time_bound_s(concurrency):.0f} s at concurrency "
                              f"{concurrency} and was stopped (its log: {level_dir / 'aiperf.log'})")
        if ran.exit_code != 0 or not export.is_file():
            raise TritonopsError(f"aiperf failed at concurrency {concurrency} (exit {ran.exit_code}): "
                                 f"{_last_line(ran.log)} (its log: {level_dir / 'aiperf.log'})")
        text = export.read_text()
        version = version or aiperf_version(text)
        levels.append(level_from_aiperf(concurrency, text, server_times(before, after, fleet.model)))
    summary = BenchSummary(fleet.deployment, release, fleet.model, fleet.through,
                           tuple(e.name for e in fleet.endpoints), _workload_doc(workload), tuple(levels), started,
                           version)
    store.write_summary(run_dir, summary)
    return summary, run_dir


def _other_run(root: Path, deployment: str, summary: BenchSummary, compare_to: str) -> BenchSummary | None:
    runs = [run for _, run in store.kept_runs(root, deployment) if run.started != summary.started]
    if compare_to == "previous":
        return previous_run(runs, summary)
    found = previous_run(runs, summary, compare_to)
    if found is None:
        known = sorted({run.release for run in runs if comparable(summary, run)})
        raise InputError(f"no kept bench of release {compare_to!r} for {deployment} like this one (model "
                         f"{summary.model} through {summary.through}; benched so: {', '.join(known) or 'none'})",
                         "--compare")
    return found


def _workload_doc(workload: Workload) -> dict:
    doc = {"mode": workload.mode, "concurrency": list(workload.concurrency), "request_rate": workload.request_rate,
           "input_tokens": workload.input_tokens, "output_tokens": workload.output_tokens,
           "requests": {str(c): workload.requests_at(c) for c in workload.concurrency}
           if workload.duration_s is None else None, "duration_s": workload.duration_s}
    if workload.tenants:  # the shared-prefix workload; a random one's summary stays as it was
        doc.update(tenants=workload.tenants, prefix_tokens=workload.prefix_tokens)
    return doc


def _last_line(log: str) -> str:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return one_line((errors or lines or ["no output"])[-1])[:300]


def read_fleet(pool: SessionPool, hosts, balancers, deployment: str, model: str, through: str | None) -> Fleet:
    by_name = {host.name: host for host in hosts}

    def phase(session: HostSession):
        from tritonops.results import HostResult
        root, name = deployment_of(by_name[session.name])
        release = read_deployed(session.transport, root, name, host_ports(by_name[session.name].vars)).current_release
        return HostResult(session.name, "ok", "", release)

    read = pool.run(phase, [host.name for host in hosts], task="bench")
    for result in read:
        if result.status == "unreachable":
            raise BenchUnreachable(f"{result.host}: {result.msg}")
        if not result.ok:
            raise BenchFailed(f"{result.host}: {result.msg}")
    releases = {r.host: r.payload for r in read if r.payload is not None}
    if not releases:
        raise InputError(f"deployment {deployment}: no selected host serves a release: deploy first")
    served = sorted({m for release in releases.values() for m in (release.serve.models if release.serve
                                                                  else release.models)})
    if model and model not in served:
        hint = close_matches(model, served)
        raise InputError(f"model {model!r} is not served by {deployment} (it serves: {', '.join(served)})"
                         + (f"; did you mean {hint[0]!r}?" if hint else ""), "--model")
    if not model:
        if len(served) != 1:
            raise InputError(f"{deployment} serves {len(served)} models ({', '.join(served)}): name one", "--model")
        model = served[0]
    modes = {release.mode.name: release.mode for release in releases.values()}
    if len(modes) > 1:
        raise InputError(f"deployment {deployment}: its hosts serve in several modes ({', '.join(sorted(modes))}): "
                         "bench them apart (--limit)")
    mode = next(iter(modes.values()))
    doors = door_endpoints(balancers, deployment)
    through = through or ("balancer" if doors else "replicas")
    if through == "balancer":
        if not doors:
            raise InputError(f"deployment {deployment} has no balancer in tritonops_balancers (selected)",
                             "--through")
        endpoints = doors
    else:
        endpoints = []
        for host in hosts:
            release = releases.get(host.name)
            if release is None:
                continue
            port = whole_number(host.vars.get("tritonops_http_port", 8000), "tritonops_http_port",
                                host_where(host, "tritonops_http_port"), minimum=1, maximum=65535)
            endpoints += replica_endpoints(host, release.serve, port)
    key = _door_key(pool, doors[0]) if through == "balancer" and doors[0].keys_file else None
    return Fleet(deployment, releases, tuple(endpoints), through, model, key, mode)


def _door_key(pool: SessionPool, endpoint: Endpoint) -> str:
    """The first key of the balancer's keys file, read over its session (never printed or kept)."""
    import shlex

    def phase(session: HostSession):
        from tritonops.results import HostResult
        found = session.transport.run(shlex.join(("head", "-n", "1", endpoint.keys_file)), timeout=30)
        key = found.stdout.strip() if found.ok else ""
        if not key:
            return HostResult(session.name, "failed", f"no API key in {endpoint.keys_file}: {found.tail(1)}")
        return HostResult(session.name, "ok", "", key)

    result = pool.run(phase, [endpoint.host], task="bench")[endpoint.host]
    if result.status == "unreachable":
        raise BenchUnreachable(f"{endpoint.host}: {result.msg}")
    if not result.ok:
        raise BenchFailed(f"{endpoint.host}: {result.msg}")
    return result.payload


def check_ready(endpoint: Endpoint, mode: ServingMode = KSERVE) -> None:
    url = f"{endpoint.url}{mode.ready().path}"
    try:
        with urllib.request.urlopen(url, timeout=READY_TIMEOUT_S) as reply:
            if reply.status == 200:
                return
            status = reply.status
    except urllib.error.HTTPError as err:
        status = err.code
    except (OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        raise BenchUnreachable(f"{endpoint.name}: {endpoint.url} does not answer ({one_line(str(reason))}): "
                               "nothing was sent") from None
    raise BenchFailed(f"{endpoint.name}: {url} answers HTTP {status}, not ready: nothing was sent")


def tokenizer_for(pool: SessionPool, root: Path, hosts, fleet: Fleet) -> str:
    """The controller's copy of the model (a local folder the inventory names), else the files of the weights
    folder the release names, fetched once from the first serving host."""
    for host in hosts:
        for entry in model_entries(host, None):
            if entry.name == fleet.model:
                found = tokenizer.local_copy(entry.model_ref)
                if found:
                    return found
    name, release = next(iter(fleet.releases.items()))
    dirs = list(release.serve.weights_dirs if release.serve else ())
    models = list(release.serve.models if release.serve else release.models)
    if not dirs:
        raise InputError(f"{name}: release {release.id} names no weights folder to read the tokenizer from",
                         "--tokenizer")
    weights = dirs[models.index(fleet.model)] if len(dirs) == len(models) and fleet.model in models else dirs[0]
    session = pool.session(name)
    return tokenizer.fetched_copy(root, session.transport, name, weights)


def _server_figures(inputs: RunInputs, options: ReadOptions) -> list:
    """Every replica's model figures (summed per host), [] when a host cannot be read (the level's server times
    are then left out, not wrong). The balancers' own figures (rows of task "door") are not the servers'."""
    found = []
    for result in fetch_metrics(inputs, options):
        if result.task == "door":
            continue
        if not result.ok or result.payload is None:
            return []
        found += list(result.payload.models)
    return found


def level_ok(level: LevelResult) -> bool:
    return level.requests_ok > 0 and level.requests_failed == 0
