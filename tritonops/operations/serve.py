"""serve_release: the host's Triton container runs the release, and answered a real request.

Facts: the release folders, the weights manifests (which release holds this content), the running
container and `current`. Nothing to do when the container already runs this release (a no-op
redeploy restarts nothing). Otherwise one `ServeStep`: the serve program on the host stops the old
container, starts the release's, gates it (live, ready, every model ready, a generate request that
returns text) and switches `current`; on failure it puts the previous container back, gates it, and
the task fails with the reason read from the logs ("rolled back: unknown engine argument: ...").
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
from tritonops.facts.queries import CommandQuery, DirQuery, Facts, FileQuery, Query
from tritonops.logs.ecs import LOGGER_SOURCE
from tritonops.logs.shipping import (DRIVERS, LOCAL_FALLBACK, LogSettingError, LogShipping, deployment_tag,
                                     log_shipping)
from tritonops.operations.base import Args
from tritonops.operations.release import (RELEASE_FILE, REPOSITORY_DIR, ReleaseArgs, content_digest, existing_release,
                                          weights_digest)
from tritonops.operations.restarts import restart_lines, rollback_lines
from tritonops.operations.steps import Learned, Step, StepFailed
from tritonops.planning.bind import WILDCARD, local_address
from tritonops.planning.serve_record import ServeRecord, ServeRecordError
from tritonops.serving import program
from tritonops.serving.releases import parse_releases, releases_query, rollback_target
from tritonops.serving.container_commands import inspect_serving, list_deployment
from tritonops.serving.container import DEFAULT_ULIMITS, Ports, ServeSpec, logging_digest, run_argv
from tritonops.serving.outcome import serve_outcome
from tritonops.serving.ray_member import ray_member
from tritonops.serving.replica_rollout import ContainerFact, HostFacts, plan_rollout
from tritonops.serving.verdict import KV_PATTERNS
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


def _inspect(deployment: str, index: int) -> tuple[str, ...]:
    """What replica `index`'s container runs (serving.container_commands.inspect_serving)."""
    return inspect_serving(replica_container(deployment, index))


@dataclass(frozen=True)
class ServeStep:
    """Run the serve program on the host: stop, start, gate, switch or roll back (one SSH command)."""

    specs: tuple[ServeSpec, ...]       # one per replica, in rollout order
    payload: dict = field(repr=False)
    models: tuple[str, ...]
    predicted_kv_tokens: int
    restarts: tuple[str, ...] = ()     # --diff: per replica, whether its container restarts and why

    @property
    def spec(self) -> ServeSpec:
        return self.specs[0]

    def describe(self) -> str:
        ray = self.payload.get("ray")
        if ray is not None and ray["role"] == "worker":
            return (f"run the Ray worker node {ray['container']} of release {self.payload['release']} (pipeline "
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
        stepped, learned = self._run(transport, self.payload)
        assert learned is not None  # the program steps only when asked to
        return learned

    @property
    def replica_indices(self) -> tuple[int, ...]:
        """The replicas' indices in rollout order (a balancer's server names end in them)."""
        return tuple(int(r["name"] or 0) for r in self.payload["replicas"])

    def run_replica(self, transport: Transport, position: int, earlier: list) -> tuple[dict | None, Learned | None]:
        """The replica at `position` of the rollout only, for a controller that paces it (a balancer drains each
        replica first): (what the program answered for that replica, None) while later ones remain, (None, the
        step's result) for the last; StepFailed when it failed (the program put back the replicas of `earlier`,
        the answers of the runs before, that had switched)."""
        return self._run(transport, {**self.payload, "step": position, "earlier": earlier})

    def _run(self, transport: Transport, payload: dict) -> tuple[dict | None, Learned | None]:
        command = shlex.join(("python3", "-c", program.SOURCE))
        result = transport.run(command, stdin=json.dumps(payload).encode(), timeout=payload["deadline_s"] * 2 + 180)
        if not result.ok:
            raise TritonopsError(f"the serve program failed (exit {result.exit_code}): {result.tail(3)}")
        answer = json.loads(result.stdout)
        if answer.get("status") == "stepped":
            return answer["result"], None
        outcome = serve_outcome(answer, self.payload["release"], self.predicted_kv_tokens)
        if not outcome.served:
            raise StepFailed(outcome.failure, outcome)
        return None, Learned(result.command, result.exit_code, result.stdout, result.stderr, outcome)


def serve_verdict(answer: dict[str, Any], predicted_kv_tokens: int) -> str | None:
    """None when the release serves; else the task's one-line failure (the serve program's answer). Pure."""
    return serve_outcome(answer, "", predicted_kv_tokens).failure


class ServeOperation:
    name: ClassVar[str] = "serve_release"
    Args: ClassVar[type[Args]] = ServeArgs

    def facts(self, args: ServeArgs) -> Iterable[Query]:
        releases = posixpath.join(args.release.root, "releases")
        inspects = [CommandQuery(_inspect(args.deployment, r.index)) for r in args.serve.replicas]
        current = posixpath.join(args.release.root, "current")
        return [DirQuery(releases), *map(FileQuery, sorted(args.release.weights_manifests)), *inspects,
                CommandQuery(list_deployment(args.deployment)), FileQuery(current),
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
        current = facts.file(posixpath.join(args.release.root, "current"))
        logging = logging_digest(args.shipping(args.deployment))
        replicas = args.serve.replicas
        names = {r.container(args.deployment) for r in replicas}
        listed = facts.command(list_deployment(args.deployment))
        surplus = [n for n in listed.stdout.split() if n not in names and "--" not in n] if listed.ok else []

        def serving(replica) -> bool:
            running = facts.command(_inspect(args.deployment, replica.index))
            words = running.stdout.split() if running.ok else []
            return (len(words) == 5 and words[0] == release and words[1] == "true"
                    and words[2] == args.release.image_id and words[4] == logging)

        # a pipeline's member is always asked (its program re-gates and answers found_serving when all is well):
        # a worker's node can die and come back while the head's Triton still runs, its engine broken
        if (args.serve.cluster is None and all(serving(r) for r in replicas) and not surplus
                and current.kind == "link" and current.link_target == f"releases/{release}"):
            return
        refused = _refusals(args, facts, release, listed.stdout.split() if listed.ok else [])
        if refused:  # in --check too: what the real run would refuse, said before anything changes
            raise TritonopsError("refused, nothing stopped: " + "; ".join(refused))
        step = serve_step(args.release.root, args.deployment, release, args.release.image_id, args.serve, args,
                          gpu_processes=args.gpu_processes)
        yield replace(step, restarts=tuple(_restarts(args, facts, step, release, logging)))


def _refusals(args: ServeArgs, facts: Facts, release: str, running: list[str]) -> tuple[str, ...]:
    """Why the rollout cannot start (serving.replica_rollout's refusals): a port of a replica that is not running
    bound by a process that is none of the deployment's running replicas (read from the kernel's socket tables).
    A GPU another process holds is refused by the serve program on the host (it tells a replica's processes apart)."""
    texts = [facts.file(table).text for table in TABLES]
    serving = _current_serve(args, facts)
    if any(text is None for text in texts) or (running and serving is None):
        return ()  # who holds what is not known here: the serve program checks on the host
    ours = {port for r in (serving.replicas if serving else ()) if r.container(args.deployment) in running
            for port in r.ports}
    listeners = frozenset().union(*(parse_listeners(text) for text in texts))
    held = frozenset(port for r in args.serve.replicas for port in r.ports if port not in ours
                     and any(binds(listener, args.bind_address, port) for listener in listeners))
    containers = {}
    for r in args.serve.replicas:
        words = facts.command(_inspect(args.deployment, r.index)).stdout.split()
        if len(words) == 5:
            containers[r.container(args.deployment)] = ContainerFact(words[0] or None, words[1] == "true")
    plan = plan_rollout(args.deployment, release, args.serve, HostFacts(containers, held_ports=held))
    return plan.refusals


def _current_serve(args: ServeArgs, facts: Facts) -> ServeRecord | None:
    """The serve record of the release `current` names (None: none, or not one tritonops can read)."""
    try:
        document = json.loads(facts.file(posixpath.join(args.release.root, "current", RELEASE_FILE)).text or "")
        return ServeRecord.from_release(document["serve"], host_ports=settings_ports(args.model_dump()))
    except (ValueError, KeyError, TypeError, ServeRecordError):
        return None


def _restarts(args: ServeArgs, facts: Facts, step: ServeStep, release: str, logging: str) -> list[str]:
    current = posixpath.join(args.release.root, "current")
    replicas = args.serve.replicas if step.specs else ()  # a pipeline's worker starts none
    containers = {}
    for replica in replicas:
        running = facts.command(_inspect(args.deployment, replica.index))
        if running.ok:
            containers[replica.index] = running.stdout.split()
    try:
        document = json.loads(facts.file(posixpath.join(current, RELEASE_FILE)).text or "")
    except ValueError:
        document = None
    texts = {path: facts.file(posixpath.join(current, REPOSITORY_DIR, path)).text
             for path in args.release.files if path.endswith(".json")}
    document = document if isinstance(document, dict) else None
    return restart_lines(replicas, args.deployment, containers, release, args.release.image_id, logging,
                         args.release.files, document, _current_serve(args, facts), texts,
                         weights_digest(args.release, facts))


def serve_step(root: str, deployment: str, release: str, image_id: str, serve: ServeRecord,
               settings: ContainerSettings, gpu_processes: Iterable[dict] = ()) -> "ServeStep":
    """The step that starts `release` (what it serves: its record) on each of its replicas, with the host's gate
    settings (`settings`: the task's arguments). `gpu_processes`: what the probe saw on the GPUs, each replica
    refusing those on its own."""
    log = settings.shipping(deployment)
    mode = serve.mode
    admin_key_file = settings.admin_key_file if mode.restricts_apis else None
    member = ray_member(serve.cluster, root, deployment, image_id) if serve.cluster is not None else None
    if member is not None:
        gpu_processes = ()  # a pipeline's GPUs are its Ray node's: the node's workers hold them, not Triton
    specs, replicas = [], []
    for replica in (serve.replicas if member is None or member.role == "head" else ()):
        http, grpc, metrics = replica.ports
        spec = ServeSpec(deployment=deployment, release=release, release_dir=posixpath.join(root, "releases", release),
                         image_id=image_id, gpus=replica.gpus, weights_dirs=serve.weights_dirs,
                         ports=Ports(http, grpc, metrics, settings.bind_address),
                         shm_size=settings.shm_size, ulimits=tuple(settings.ulimits),
                         triton_args=tuple(settings.triton_args),
                         admin_key_file=admin_key_file, log=log,
                         logger_path=posixpath.join(root, "bin", "container_logger.py"),
                         host_name=settings.host_name, models=serve.models,
                         replica=replica_label(replica.index), mode=mode,
                         ray=member.driver if member is not None else None)
        specs.append(spec)
        replicas.append({"name": replica.index, "container": spec.container, "run_argv": list(run_argv(spec)),
                         "fallback_run_argv": list(run_argv(spec, log=LOCAL_FALLBACK)), "http_port": http,
                         "ports": [http, grpc, metrics], "endpoints": mode.endpoints(replica.ports),
                         "gpus": list(replica.gpus),
                         "gpu_processes": [p for p in gpu_processes if p.get("gpu") in replica.gpus]})
    if len(replicas) == 1:
        replicas[0]["name"] = None  # one container: said as before replicas
    logger_path = posixpath.join(root, "bin", "container_logger.py")
    payload = {"root": root, "release": release, "image_id": image_id,
               "replicas": replicas, "deployment": deployment,
               "log_driver": log.driver, "log_collector": log.collector, "logging": logging_digest(log),
               "logger_path": logger_path, "logger_source": LOGGER_SOURCE,
               "admin_key_file": admin_key_file,
               "bind": settings.bind_address, "address": local_address(settings.bind_address),  # where the gate asks
               "models": list(serve.models), "deadline_s": serve.deadline_s,
               "stop_timeout_s": 30, "prompt": settings.prompt, "max_tokens": settings.max_tokens,
               "requests": mode.host_requests(list(serve.models), settings.prompt, settings.max_tokens),
               "predicted_kv_tokens": serve.kv_cache_tokens, "kv_patterns": list(KV_PATTERNS),
               "keep": settings.keep_releases}
    if member is not None:
        payload["ray"] = member.program_input(serve.deadline_s)
    return ServeStep(tuple(specs), payload, serve.models, serve.kv_cache_tokens)


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
        return [releases_query(args.root, args.deployment)]

    def steps(self, args: RollbackArgs, facts: Facts) -> Iterable[Step]:
        deployed = parse_releases(facts.command(releases_query(args.root, args.deployment).argv).stdout,
                                  settings_ports(args.model_dump()))
        target = rollback_target(deployed, args.to)
        container = deployed.container or {}
        if deployed.current == target.id and container.get("running") and container.get("release") == target.id:
            return
        if not target.serve or not target.image_id:
            raise TritonopsError(f"release {target.id} does not say how to start it (made by an older tritonops?)")
        step = serve_step(args.root, args.deployment, target.id, target.image_id, target.serve, args)
        yield replace(step, restarts=tuple(rollback_lines(deployed.current_release, target)))


serve_release = ServeOperation()
rollback_release = RollbackOperation()
