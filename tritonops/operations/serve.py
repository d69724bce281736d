"""serve_release: the host's Triton container runs the release, and answered a real request.

Facts: the release folders, the weights manifests (which release holds this content), the running
container and `current`. Nothing to do when the container already runs this release (a no-op
redeploy restarts nothing). Otherwise one `ServeStep`, carried out from the controller
(operations/serve_rollout.py) as serving/replica_rollout.py planned it from the host's facts: each replica's
old container stopped and parked, the release's started and gated (live, ready, every model ready, a generate
request that returns text), `current` switched once every one passed; on failure the previous container back and
gated, and the task fails with the reason read from the logs ("rolled back: unknown engine argument: ...").
"""

from __future__ import annotations

import ipaddress
import json
import posixpath
import shlex
from dataclasses import dataclass, field, replace

from pydantic import ValidationInfo, field_validator
from collections.abc import Mapping
from typing import Any, ClassVar, Iterable

from tritonops.errors import TritonopsError
from tritonops.facts.listeners import TABLES, binds, parse_listeners
from tritonops.facts.queries import DirQuery, Facts, FileQuery, Query
from tritonops.logs.ecs import LOGGER_SOURCE
from tritonops.logs.shipping import (DRIVERS, LogSettingError, LogShipping, deployment_tag,
                                     log_shipping)
from tritonops.operations.base import Args
from tritonops.operations.release import (RELEASE_FILE, REPOSITORY_DIR, ReleaseArgs, content_digest, existing_release,
                                          weights_digest)
from tritonops.operations.restarts import restart_lines, rollback_lines
from tritonops.operations.steps import Learned, Step, StepFailed
from tritonops.planning.bind import WILDCARD, local_address
from tritonops.planning.serve_record import ServeRecord, ServeRecordError
from tritonops.serving.releases import parse_releases, releases_query, rollback_target
from tritonops.serving.container import DEFAULT_ULIMITS, Ports, ServeSpec, logging_digest, run_argv
from tritonops.serving.ray_member import ray_member
from tritonops.serving.replica_rollout import HostFacts, ReplicaPlan, RolloutPlan, plan_rollout
from tritonops.serving.rollout_facts import (ContainerState, containers_query, gpu_holders_query,
                                             parse_container_states, parse_containers, parse_holders)
from tritonops.operations.serve_rollout import NoDoor, ReplicaDoor, ReplicaLaunch, Rollout, run_rollout
from tritonops.transport.base import Transport
from tritonops.values.containers import replica_container, replica_label


class ContainerSettings(Args):
    """The host's side of serving, the same for every release: ports, shared memory, limits, extra
    tritonserver flags, admin key, gate request."""

    http_port: int = 8000
    grpc_port: int = 8001
    metrics_port: int = 8002
    bind_address: str = WILDCARD      # planned by planning.bind (the deploy's serve.bind, the rollback's own)
    shm_size: str | None = None
    ulimits: list[str] = list(DEFAULT_ULIMITS)
    triton_args: list[str] = []
    admin_key_file: str | None = None
    prompt: str = "The capital of France is"
    max_tokens: int = 8
    keep_releases: int = 5           # after a release passes: older ones removed (never current or previous)
    host_name: str = ""              # the inventory name, the log lines' host.name
    log_driver: str = "json-file"    # Docker logging driver (logs.shipping.DRIVERS)
    log_collector: str | None = None  # its address (syslog, fluentd, gelf)
    log_max_size: str = "50m"        # json-file / local rotation
    log_max_file: int = 5
    log_buffer_size: str = "4m"      # non-blocking mode's buffer
    log_options: dict[str, Any] = {}  # more options of the driver; checked last, with the fields above

    @field_validator("bind_address")
    @classmethod
    def _an_address(cls, address: str) -> str:
        try:
            return str(ipaddress.ip_address(address))
        except ValueError:
            raise ValueError(f"tritonops_bind_address {address!r} is not an IP address") from None

    @field_validator("log_driver")
    @classmethod
    def _known_driver(cls, driver: str) -> str:
        if driver not in DRIVERS:
            raise ValueError(f"tritonops_log_driver {driver!r} is not one tritonops ships with; allowed: "
                             f"{', '.join(DRIVERS)}")
        return driver

    @field_validator("log_options")
    @classmethod
    def _shipping_settings(cls, options: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        data = info.data
        if "log_driver" in data:
            try:
                log_shipping(data["log_driver"], data.get("log_collector"), options,
                             max_size=data.get("log_max_size", "50m"), max_file=data.get("log_max_file", 5),
                             buffer_size=data.get("log_buffer_size", "4m"))
            except LogSettingError as err:
                raise ValueError(str(err)) from None
        return options

    def shipping(self, deployment: str) -> LogShipping:
        return log_shipping(self.log_driver, self.log_collector, self.log_options, max_size=self.log_max_size,
                            max_file=self.log_max_file, buffer_size=self.log_buffer_size,
                            tag=deployment_tag(deployment))

    @field_validator("triton_args")
    @classmethod
    def _flags_only(cls, args: list[str]) -> list[str]:
        for arg in args:
            if not arg.startswith("--") or "\n" in arg or "\0" in arg:
                raise ValueError(f"a tritonserver flag starts with '--', not {arg[:40]!r}")
        return args


class ServeArgs(ContainerSettings):
    release: ReleaseArgs            # the same arguments the release task had: they name the release
    deployment: str
    serve: ServeRecord              # what the release serves: models, replicas, weights, gate, mode, pipeline
    gpu_processes: list[dict] = []  # {gpu, pid, bytes} the probe saw on the release's GPUs

    @field_validator("serve", mode="before")
    @classmethod
    def _a_record(cls, serve: Any, info: ValidationInfo) -> ServeRecord:
        if isinstance(serve, ServeRecord):
            return serve
        try:  # release.json's `serve` as the plan wrote it (deploy.flow)
            return ServeRecord.from_release(serve, host_ports=settings_ports(info.data))
        except ServeRecordError as err:
            raise ValueError(str(err)) from None


def settings_ports(settings: Mapping[str, Any]) -> dict[str, int]:
    """The task's port arguments by role, for a release made before replicas (one replica at the host's ports)."""
    return {role: settings[f"{role}_port"] for role in ("http", "grpc", "metrics") if f"{role}_port" in settings}


@dataclass(frozen=True)
class ServeStep:
    """Roll the release out over the host's replicas from the controller (operations/serve_rollout.py): the plan's
    docker commands over the host's session, each replica gated on the host, or the previous release put back."""

    specs: tuple[ServeSpec, ...]       # one per replica, in rollout order
    rollout: Rollout = field(repr=False)
    models: tuple[str, ...]
    predicted_kv_tokens: int
    restarts: tuple[str, ...] = ()     # --diff: per replica, whether its container restarts and why

    @property
    def spec(self) -> ServeSpec:
        return self.specs[0]

    def describe(self) -> str:
        ray = self.rollout.ray
        if ray is not None and ray["role"] == "worker":
            return (f"run the Ray worker node {ray['container']} of release {self.rollout.release} (pipeline "
                    f"stage on this host; Triton runs on the head)")
        if ray is not None:
            return (f"run the Ray head node {ray['container']}, wait for the cluster's {len(ray['addresses'])} "
                    f"nodes, start {self.spec.container} on release {self.spec.release} as the pipeline's driver "
                    f"and gate it")
        if len(self.specs) == 1:
            return f"start {self.spec.container} on release {self.spec.release} (GPUs {list(self.spec.gpus)}) and gate it"
        each = ", ".join(f"{s.container} (GPUs {list(s.gpus)})" for s in self.specs)
        return f"start release {self.spec.release} on {len(self.specs)} replicas one at a time and gate each: {each}"

    def diff_text(self) -> str:
        """For --diff: per replica, whether its container restarts and why."""
        return "".join(f"{line}\n" for line in self.restarts)

    def details(self) -> tuple[str, ...]:
        """For -v: each container as it starts (its `docker run`, the server's command line last)."""
        return tuple(f"{spec.container} on release {spec.release}: {shlex.join(run_argv(spec))}"
                     for spec in self.specs)

    def run_on(self, transport: Transport) -> Learned:
        return self.run_behind(transport, NoDoor())

    def run_behind(self, transport: Transport, door: ReplicaDoor) -> Learned:
        """The rollout with `door` drained and set ready around each replica (the deploy's balancers)."""
        outcome, commands = run_rollout(transport, self.rollout, door)
        if not outcome.served:
            raise StepFailed(outcome.failure or "failed", outcome)
        said = json.dumps({"status": outcome.status, "previous": outcome.previous, "commands": commands})
        return Learned(self.describe(), 0, said, "", outcome)


class ServeOperation:
    name: ClassVar[str] = "serve_release"
    Args: ClassVar[type[Args]] = ServeArgs

    def facts(self, args: ServeArgs) -> Iterable[Query]:
        releases = posixpath.join(args.release.root, "releases")
        current = posixpath.join(args.release.root, "current")
        holders = [gpu_holders_query(args.gpu_processes, args.deployment)] if args.gpu_processes else []
        return [DirQuery(releases), *map(FileQuery, sorted(args.release.weights_manifests)), FileQuery(current),
                containers_query(args.deployment), *holders,  # the deployment's containers, every state
                *(FileQuery(table, content=True) for table in TABLES),  # who listens on the replicas' ports
                # what the serving release holds, for --diff's why a replica restarts
                FileQuery(posixpath.join(current, RELEASE_FILE), content=True),
                *(FileQuery(posixpath.join(current, REPOSITORY_DIR, path), content=True)
                  for path in sorted(args.release.files) if path.endswith(".json"))]

    def steps(self, args: ServeArgs, facts: Facts) -> Iterable[Step]:
        digest = content_digest(args.release, weights_digest(args.release, facts))
        release = existing_release(facts.dir(posixpath.join(args.release.root, "releases")).names, digest)
        if release is None:  # in --check before the release exists: the one the release task would make
            release = f"{args.release.created}-{digest[:8]}"
        link = facts.file(posixpath.join(args.release.root, "current"))
        current = link.link_target.removeprefix("releases/") if link.kind == "link" and link.link_target else None
        logging = logging_digest(args.shipping(args.deployment))
        listing = facts.command(containers_query(args.deployment).argv)
        states = parse_container_states(listing.stdout) if listing.ok else {}
        names = {r.container(args.deployment) for r in args.serve.replicas}
        surplus = [n for n, c in states.items() if c.running and n not in names and "--" not in n]

        def serving(replica) -> bool:
            state = states.get(replica.container(args.deployment))
            return state is not None and state.runs(release, args.release.image_id, logging)

        # a pipeline's member is always asked (its program re-gates and answers found_serving when all is well):
        # a worker's node can die and come back while the head's Triton still runs, its engine broken
        if (args.serve.cluster is None and all(serving(r) for r in args.serve.replicas) and not surplus
                and current == release):
            return
        document = _current_document(args, facts)
        serving_record = _record_of(args, document)
        member = ray_member(args.serve.cluster, args.release.root, args.deployment, args.release.image_id) \
            if args.serve.cluster is not None else None
        if member is not None and member.role == "worker":  # a worker starts no replica: its Ray node only
            plan, again = RolloutPlan(release, ()), {}
        else:
            plan, again = rollout_plan(args.deployment, release, args.serve, _host_facts(
                args, facts, states, logging, current, document, serving_record, gpus=member is None))
        if plan.refused:  # in --check too: what the real run would refuse, said before anything changes
            raise TritonopsError("refused, nothing stopped: " + "; ".join(plan.refusals))
        step = serve_step(args.release.root, args.deployment, release, args.release.image_id, args.serve, args,
                          plan, again)
        yield replace(step, restarts=tuple(_restarts(args, facts, step, release, logging, states, document,
                                                     serving_record)))


def rollout_plan(deployment: str, release: str, serve: ServeRecord,
                 host: HostFacts) -> tuple[RolloutPlan, dict[int, ReplicaPlan]]:
    """The rollout's plan, and for each replica it finds running the release as asked, how it restarts should it
    not answer its gate (a stop-first plan of its own). Pure."""
    plan = plan_rollout(deployment, release, serve, host)
    unchanged = {r.index for r in plan.replicas if r.order == "unchanged"}
    if not unchanged:
        return plan, {}
    names = {replica_container(deployment, index) for index in unchanged}
    unwell = replace(host, containers={name: replace(c, as_asked=False) if name in names else c
                                       for name, c in host.containers.items()})
    return plan, {r.index: r for r in plan_rollout(deployment, release, serve, unwell).replicas if r.index in unchanged}


def _host_facts(args: ServeArgs, facts: Facts, states: Mapping[str, ContainerState], logging: str,
                current: str | None, document: dict | None, serving: ServeRecord | None, gpus: bool) -> HostFacts:
    """What the planner reads of the host: the deployment's containers, `current` and whether it passed a gate
    (`document`: its release.json), the GPUs and ports another process holds (the deployment's running replicas'
    own ports left out), the record of the release now serving."""
    holders: dict[int, str] = {}
    if gpus and args.gpu_processes:
        asked = facts.command(gpu_holders_query(args.gpu_processes, args.deployment).argv)
        holders = parse_holders(asked.stdout) if asked.ok else {}
    passed = any(isinstance(g, dict) and g.get("passed") for g in (document or {}).get("gates") or [])
    running = [name for name, state in states.items() if state.running]
    return HostFacts({name: state.fact(args.release.image_id, logging) for name, state in states.items()},
                     current=current, passed=frozenset({current} if current and passed else ()),
                     held_gpus=frozenset(holders), holders=holders,
                     held_ports=_held_ports(args.serve, args.deployment, args.bind_address,
                                            [facts.file(table).text for table in TABLES], serving, running),
                     serving=serving)


def _held_ports(serve: ServeRecord, deployment: str, bind: str, tables: list[str | None],
                serving: ServeRecord | None, running: list[str]) -> frozenset[int]:
    """The replicas' ports, on either of their slots, a process binds that is none of the deployment's running
    replicas (from the kernel's socket tables); none when who holds what is not known here."""
    if any(text is None for text in tables) or (running and serving is None):
        return frozenset()
    ours = {port for r in (serving.replicas if serving else ()) if r.container(deployment) in running
            for port in r.ports}
    listeners = frozenset().union(*(parse_listeners(text) for text in tables if text is not None))
    return frozenset(port for r in serve.replicas for port in (*r.ports, *(r.standby.ports if r.standby else ()))
                     if port not in ours and any(binds(listener, bind, port) for listener in listeners))


def _current_document(args: ServeArgs, facts: Facts) -> dict | None:
    """The release.json of the release `current` names (None: none, or not a JSON object)."""
    try:
        document = json.loads(facts.file(posixpath.join(args.release.root, "current", RELEASE_FILE)).text or "")
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _record_of(args: ServeArgs, document: dict | None) -> ServeRecord | None:
    """The serve record of that release.json (None: none, or not one tritonops can read)."""
    try:
        return ServeRecord.from_release(document["serve"], host_ports=settings_ports(args.model_dump()))
    except (KeyError, TypeError, ServeRecordError):
        return None


def _restarts(args: ServeArgs, facts: Facts, step: ServeStep, release: str, logging: str,
              states: Mapping[str, ContainerState], document: dict | None, serving: ServeRecord | None) -> list[str]:
    current = posixpath.join(args.release.root, "current")
    replicas = args.serve.replicas if step.specs else ()  # a pipeline's worker starts none
    containers = {r.index: states[r.container(args.deployment)].words() for r in replicas
                  if r.container(args.deployment) in states}
    texts = {path: facts.file(posixpath.join(current, REPOSITORY_DIR, path)).text
             for path in args.release.files if path.endswith(".json")}
    return restart_lines(replicas, args.deployment, containers, release, args.release.image_id, logging,
                         args.release.files, document, serving, texts, weights_digest(args.release, facts))


def serve_step(root: str, deployment: str, release: str, image_id: str, serve: ServeRecord,
               settings: ContainerSettings, plan: RolloutPlan | None = None,
               restarts: Mapping[int, ReplicaPlan] | None = None) -> "ServeStep":
    """The step that rolls `release` (what it serves: its record) out over its replicas as `plan` says (restarts:
    how a replica found running restarts should it not answer), with the host's gate settings (`settings`: the
    task's arguments). No plan: as on a host that has none of the deployment's containers yet."""
    log = settings.shipping(deployment)
    mode = serve.mode
    admin_key_file = settings.admin_key_file if mode.restricts_apis else None
    member = ray_member(serve.cluster, root, deployment, image_id) if serve.cluster is not None else None
    logger_path = posixpath.join(root, "bin", "container_logger.py")
    placed = serve.replicas if member is None or member.role == "head" else ()
    if plan is None:
        plan = plan_rollout(deployment, release, serve, HostFacts({})) if placed else RolloutPlan(release, ())
    booted = plan.serve or serve  # each replica on the slot the rollout boots it on
    specs, launches = [], {}
    for replica in (booted.replicas if placed else ()):
        http, grpc, metrics = replica.ports
        spec = ServeSpec(deployment=deployment, release=release, release_dir=posixpath.join(root, "releases", release),
                         image_id=image_id, gpus=replica.gpus, weights_dirs=serve.weights_dirs,
                         ports=Ports(http, grpc, metrics, settings.bind_address),
                         shm_size=settings.shm_size, ulimits=tuple(settings.ulimits),
                         triton_args=tuple(settings.triton_args),
                         admin_key_file=admin_key_file, log=log, logger_path=logger_path,
                         host_name=settings.host_name, models=serve.models,
                         replica=replica_label(replica.index), mode=mode,
                         ray=member.driver if member is not None else None)
        specs.append(spec)
        launches[replica.index] = ReplicaLaunch(replica.index, spec, replica.ports)
    rollout = Rollout(
        root=root, deployment=deployment, release=release, plan=plan, launches=launches, restarts=dict(restarts or {}),
        deadline_s=serve.deadline_s, address=local_address(settings.bind_address),
        requests=mode.host_requests(list(serve.models), settings.prompt, settings.max_tokens),
        models=serve.models, predicted_kv_tokens=serve.kv_cache_tokens, keep=settings.keep_releases,
        prepare={"admin_key_file": admin_key_file, "logger_path": logger_path, "logger_source": LOGGER_SOURCE,
                 # release.json's record says where the replicas run, on either slot (rewritten where it says
                 # otherwise: a release rolled back to, or made again, may boot on its other slot this time), for
                 # the door, Prometheus, status and the next rollout
                 **({"release": release, "serve": booted.to_release()} if launches else {})},
        log_driver=log.driver, log_collector=log.collector,
        ray=member.program_input(serve.deadline_s) if member is not None else None)
    return ServeStep(tuple(specs), rollout, serve.models, serve.kv_cache_tokens)


class RollbackArgs(ContainerSettings):
    root: str                        # <tritonops_root>/<deployment>
    deployment: str
    to: str | None = None            # a release id; None: the newest earlier release that served


class RollbackOperation:
    """rollback_release: back to the previous (or a named) release — image, repository and engine
    arguments together, all read from the host's release.json; gated like a deploy."""

    name: ClassVar[str] = "rollback_release"
    Args: ClassVar[type[Args]] = RollbackArgs

    def facts(self, args: RollbackArgs) -> Iterable[Query]:
        return [releases_query(args.root, args.deployment), containers_query(args.deployment),
                *(FileQuery(table, content=True) for table in TABLES)]

    def steps(self, args: RollbackArgs, facts: Facts) -> Iterable[Step]:
        deployed = parse_releases(facts.command(releases_query(args.root, args.deployment).argv).stdout,
                                  settings_ports(args.model_dump()))
        target = rollback_target(deployed, args.to)
        container = deployed.container or {}
        if deployed.current == target.id and container.get("running") and container.get("release") == target.id:
            return
        if not target.serve or not target.image_id:
            raise TritonopsError(f"release {target.id} does not say how to start it (made by an older tritonops?)")
        listing = facts.command(containers_query(args.deployment).argv)
        containers = parse_containers(listing.stdout, target.image_id, logging_digest(args.shipping(args.deployment))) \
            if listing.ok else {}
        serving = deployed.current_release.serve if deployed.current_release is not None else None
        running = [name for name, c in containers.items() if c.running]
        held = _held_ports(target.serve, args.deployment, args.bind_address,
                           [facts.file(table).text for table in TABLES], serving, running)
        passed = frozenset(r.id for r in deployed.releases if any(isinstance(g, dict) and g.get("passed")
                                                                   for g in r.gates))
        plan, again = rollout_plan(args.deployment, target.id, target.serve, HostFacts(
            containers, current=deployed.current, passed=passed, held_ports=held, serving=serving))
        if target.serve.cluster is not None and target.serve.cluster.worker:
            plan, again = RolloutPlan(target.id, ()), {}
        if plan.refused:
            raise TritonopsError("refused, nothing stopped: " + "; ".join(plan.refusals))
        step = serve_step(args.root, args.deployment, target.id, target.image_id, target.serve, args, plan, again)
        yield replace(step, restarts=tuple(rollback_lines(deployed.current_release, target)))


serve_release = ServeOperation()
rollback_release = RollbackOperation()
