"""`tritonops status`: per host and model, what runs and how it does. Facts and pure parsers.

Two reads per host: the releases fact (releases.py: releases, current, the container) and the
`health_query` program (Triton's health, each model's readiness, the metrics text, all on the host itself,
where the replicas are bound). `parse_metrics` turns Triton's Prometheus text into per-model request counts and average
times; `host_status` puts it together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

from tritonops import host_programs
from tritonops.facts.queries import CommandQuery
from tritonops.serving.container_commands import inspect_states
from tritonops.logs.shipping import LogShipping
from tritonops.metrics.exposition import parse_exposition
from tritonops.metrics.figures import PREFIX_HITS, PREFIX_QUERIES, hit_rate
from tritonops.modes.base import ServingMode
from tritonops.planning.serve_record import ReplicaRecord
from tritonops.serving.container import logging_digest
from tritonops.serving.ray_member import ClusterView
from tritonops.serving.releases import Deployed
from tritonops.serving.verdict import kv_shortfall

HEALTH_SOURCE = host_programs.source("triton_health")  # host_programs/triton_health.py

_DURATIONS = {"request": "nv_inference_request_duration_us", "queue": "nv_inference_queue_duration_us",
              "compute_input": "nv_inference_compute_input_duration_us",
              "compute_infer": "nv_inference_compute_infer_duration_us",
              "compute_output": "nv_inference_compute_output_duration_us"}


def health_query(mode: ServingMode, host_ports: tuple[int, ...] | list[int], models: tuple[str, ...],
                 address: str = "127.0.0.1") -> CommandQuery:
    """The replica's health as its serving mode asks it, at its ports on the host (in the mode's order, as
    release.json records them). `address`: where the replica answers on the host (planning.bind.local_address),
    checked by the caller."""
    check = {"endpoints": mode.endpoints(host_ports), "models": list(models), "requests": mode.host_requests(models)}
    return CommandQuery(("python3", "-c", HEALTH_SOURCE, address, json.dumps(check, separators=(",", ":"))))


STOPPED = "stopped"
RESTART_POLICY = "unless-stopped"  # serving.container.ServeSpec.restart: what every replica runs with


def container_states_query(names: tuple[str, ...]) -> CommandQuery:
    """Each named container's state, a line `/<name> <status> <restart policy> <release label>` (a missing one is
    no line)."""
    return CommandQuery(inspect_states(names))


@dataclass(frozen=True)
class ContainerFacts:
    """A container as `container_states_query` reads it."""
    status: str                   # Docker's: running, exited, restarting, created, paused, dead
    restart: str = ""             # its restart policy (unless-stopped for a replica)
    release: str = ""             # its tritonops.release label


def parse_containers(stdout: str) -> dict[str, ContainerFacts]:
    found = {}
    for line in stdout.splitlines():
        name, *fields = line.strip().split(" ")
        if name.startswith("/") and fields and fields[0]:
            found[name[1:]] = ContainerFacts(*(fields + ["", ""])[:3])
    return found


def parse_container_states(stdout: str) -> dict[str, str]:
    """Each container's Docker status alone (running, exited...)."""
    return {name: facts.status for name, facts in parse_containers(stdout).items()}


def replica_state(facts: ContainerFacts | None, current: str | None) -> str:
    """A replica's container as `status` says it: Docker's status, `absent` for none, or `stopped` for an exited
    container of the current release that runs with --restart unless-stopped: Docker restarts such a container
    whenever it exits unless someone stopped it (`tritonops stop`, `docker stop`), so it was stopped on purpose
    and `tritonops start` brings it back. A crashed replica is `restarting` (or running again, its restarts
    counted); one of another release, or without the policy, stays `exited`. Pure."""
    if facts is None:
        return "absent"
    if facts.status == "exited" and facts.restart == RESTART_POLICY and current is not None \
            and facts.release == current:
        return STOPPED
    return facts.status


@dataclass(frozen=True)
class ReplicaStatus:
    index: int
    gpus: tuple[int, ...]
    http_port: int
    container: str            # running, stopped (on purpose: replica_state), exited, restarting, absent
    ready: bool
    requests: int             # successful requests, every model
    prefix_hit_rate: float | None = None  # its vLLM's prefix cache, every model: tokens found / tokens asked

    @property
    def serving(self) -> bool:
        return self.container == "running" and self.ready


def replica_status(replica: ReplicaRecord, container: str, health: dict) -> ReplicaStatus:
    """One replica of the current release's placement: its container's state (replica_state) and its Triton's
    readiness. Pure."""
    metrics = parse_metrics(health.get("metrics") or "").values()
    return ReplicaStatus(replica.index, replica.gpus, replica.ports[0], container,
                         bool(health.get("ready")) and all((health.get("models") or {}).values()),
                         sum(m.requests for m in metrics),
                         hit_rate(sum(m.prefix_hits for m in metrics), sum(m.prefix_queries for m in metrics)))


@dataclass(frozen=True)
class ModelMetrics:
    requests: int = 0          # successful requests
    failures: int = 0
    average_ms: dict[str, float] = field(default_factory=dict)  # request, queue, compute_* per request
    prefix_queries: int = 0    # prompt tokens its vLLM looked up in its prefix cache (vllm:prefix_cache_queries)
    prefix_hits: int = 0       # of them, found there (vllm:prefix_cache_hits)

    @property
    def prefix_hit_rate(self) -> float | None:
        return hit_rate(self.prefix_hits, self.prefix_queries)


def parse_metrics(text: str) -> dict[str, ModelMetrics]:
    """Triton's Prometheus text -> per model (summed over versions) counts and average times, and the prefix
    cache's lookups and hits in tokens where the backend reports them."""
    sums: dict[str, dict[str, float]] = {}
    for sample in parse_exposition(text).samples:  # lines that are not the format are left out here
        model = sample.label("model")
        if model is None or not (sample.name.startswith("nv_inference_") or sample.name in (PREFIX_QUERIES,
                                                                                              PREFIX_HITS)):
            continue
        sums.setdefault(model, {})
        sums[model][sample.name] = sums[model].get(sample.name, 0.0) + sample.value
    found = {}
    for model, values in sums.items():
        requests = int(values.get("nv_inference_request_success", 0))
        averages = {name: round(values[metric] / requests / 1000.0, 3)
                    for name, metric in _DURATIONS.items() if requests and metric in values}
        found[model] = ModelMetrics(requests, int(values.get("nv_inference_request_failure", 0)), averages,
                                    int(values.get(PREFIX_QUERIES, 0)), int(values.get(PREFIX_HITS, 0)))
    return found


@dataclass(frozen=True)
class ModelStatus:
    name: str
    ready: bool
    metrics: ModelMetrics


@dataclass(frozen=True)
class HostStatus:
    host: str
    current: str | None
    releases: int
    container: str            # running, stopped (on purpose: replica_state), exited, restarting, absent
    uptime_s: float | None
    restarts: int
    live: bool
    ready: bool
    kv_predicted: int | None
    kv_reported: int | None
    models: tuple[ModelStatus, ...]
    vllm_metrics: bool        # vllm:* families present on :8002
    logs: str = "-"           # where the container's logs go: its driver, or what shipping fell back to
    replicas: tuple[ReplicaStatus, ...] = ()  # every replica of the current release, when it has several
    cluster: ClusterView | None = None        # a pipeline's member: its Ray node, the head's view of the members

    @property
    def stopped(self) -> tuple[int, ...]:
        """The replicas stopped on purpose (replica_state), by index; one container: (0,) when it is."""
        if self.replicas:
            return tuple(r.index for r in self.replicas if r.container == STOPPED)
        return (0,) if self.container == STOPPED else ()

    @property
    def serving(self) -> bool:
        """The container runs and Triton is ready; with replicas, every replica's but those stopped on purpose, and
        at least one. A pipeline's worker: its Ray node runs; its head: Triton ready and every member in Ray."""
        if self.cluster is not None and (self.cluster.role == "worker" or not self.cluster.whole):
            return self.cluster.whole
        if self.replicas:
            kept = [r for r in self.replicas if r.container != STOPPED]
            return bool(kept) and all(r.serving for r in kept)
        return self.container == "running" and self.ready

    @property
    def ok(self) -> bool:
        """What `status` calls ok: it serves, or every replica was stopped on purpose (`tritonops stop`: nothing is
        broken, `tritonops start` brings them back). A crashed, restarting or missing replica is not ok."""
        if self.serving:
            return True
        if self.cluster is not None:
            return False
        return bool(self.stopped) and len(self.stopped) == (len(self.replicas) or 1)

    @property
    def kv_shortfall(self) -> float | None:
        """How far vLLM's KV cache falls below the plan's, beyond the sizing's tolerance (else None)."""
        return kv_shortfall(self.kv_predicted, self.kv_reported)


def log_state(container: dict, wanted: LogShipping | None) -> str:
    """The running container's log driver; `degraded` when it runs on the local fallback while the
    settings it was started for ship elsewhere (the collector was down then)."""
    driver = container.get("log_driver")
    if not driver:
        return "-"
    if wanted is not None and wanted.ships and driver != wanted.driver \
            and container.get("logging") == logging_digest(wanted):
        where = " ".join(part for part in (wanted.driver, wanted.collector) if part)
        return f"{driver} (shipping degraded: {where} was down at start)"
    return driver


def host_status(host: str, deployed: Deployed, health: dict, now: datetime,
                wanted_logs: LogShipping | None = None, replicas: tuple[ReplicaStatus, ...] = (),
                cluster: ClusterView | None = None) -> HostStatus:
    container = deployed.container or {}
    state = replica_state(ContainerFacts(container["status"], container.get("restart") or "",
                                         container.get("release") or "") if container.get("status") else None,
                          deployed.current)
    uptime = None
    if container.get("running") and container.get("started_at"):
        started = datetime.fromisoformat(container["started_at"][:26].rstrip("Z") + "+00:00") \
            if "." in container["started_at"] else datetime.fromisoformat(container["started_at"].replace("Z", "+00:00"))
        uptime = max(0.0, (now - started).total_seconds())
    release = deployed.current_release
    gates = [gate for gate in (release.gates if release else ()) if gate.get("passed")]
    kv = (gates[-1].get("kv_cache_tokens") or {}) if gates else {}
    metrics = parse_metrics(health.get("metrics") or "")
    models = tuple(ModelStatus(name, bool(ready), metrics.get(name, ModelMetrics()))
                   for name, ready in (health.get("models") or {}).items())
    return HostStatus(host, deployed.current, len(deployed.releases), state, uptime, int(container.get("restarts", 0)),
                      bool(health.get("live")), bool(health.get("ready")), kv.get("predicted"), kv.get("reported"),
                      models, "vllm:" in (health.get("metrics") or ""), log_state(container, wanted_logs), replicas,
                      cluster)


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def parse_health(stdout: str) -> dict:
    try:
        return json.loads(stdout)
    except ValueError:
        return {}
