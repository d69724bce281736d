"""The Triton container of a release, as a `docker run` argument list. Pure, tested by equality.

One container per deployment on a host, named and labelled as values/containers.py says. The release
folder and the weights folders are mounted read-only at the same paths they have on the host, so
model.json's "model" path is valid inside. Tensor parallel needs shared memory across the GPU workers:
`--ipc=host` (or a sized `--shm-size` when the inventory asks for it).
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field

from tritonops.logs.shipping import LOCAL_FALLBACK, LogShipping, log_argv
from tritonops.modes.base import ServingMode
from tritonops.modes.kserve import KSERVE
from tritonops.serving.ray_node import RAY_TEMP_DIR
from tritonops.values.containers import LABEL_DEPLOYMENT, LABEL_RELEASE, LABEL_REPLICA, container_name

LABEL_LOGGING = "tritonops.logging"  # digest of the log settings asked for (kept on a fallback container too)
RESTRICTED_APIS = "model-repository,model-config,shared-memory,statistics,trace,logging"
ADMIN_HEADER = "tritonops-admin-key"
DEFAULT_ULIMITS = ("memlock=-1", "stack=67108864")  # what NVIDIA's containers recommend for NCCL and CUDA


@dataclass(frozen=True)
class Ports:
    http: int = 8000
    grpc: int = 8001
    metrics: int = 8002
    bind: str = "0.0.0.0"


@dataclass(frozen=True)
class RayDriver:
    """A pipeline's head (issue #28): Triton runs as a Ray driver beside the head's Ray node, on the host's
    network, in the node container's PID namespace with its session folder (Ray 2.60's driver finds its node by
    the local raylet process, so a second container attaches only so), the cluster's token by file."""

    node_container: str        # the head's Ray node container
    token_file: str            # on the host (mounted read-only; the token never on a command line)
    temp_dir: str              # on the host: the node's /tmp/ray
    node_ip: str               # the head's address (VLLM_HOST_IP)
    gcs_address: str           # host:port of the head's GCS (RAY_ADDRESS)


@dataclass(frozen=True)
class ServeSpec:
    deployment: str
    release: str                 # release id
    release_dir: str             # <root>/<deployment>/releases/<id>
    image_id: str
    gpus: tuple[int, ...]        # device indices the plan assigned
    weights_dirs: tuple[str, ...] = ()
    ports: Ports = field(default_factory=Ports)
    shm_size: str | None = None  # e.g. "16g"; None: --ipc=host
    ulimits: tuple[str, ...] = DEFAULT_ULIMITS
    triton_args: tuple[str, ...] = ()  # more tritonserver flags, after tritonops' own
    restart: str = "unless-stopped"
    exit_timeout_s: int = 30
    admin_key_file: str | None = None  # on the host: the restricted APIs' key (None: not restricted)
    log: LogShipping = LOCAL_FALLBACK  # the Docker logging driver and its options
    logger_path: str | None = None     # on the host: container_logger.py (None: tritonserver's own lines)
    host_name: str = ""                # the inventory name, for the log lines' host.name
    models: tuple[str, ...] = ()       # Triton model names, for the log lines' labels.model
    replica: str | None = None         # one container per replica (issue #22); None: one per deployment
    mode: ServingMode = KSERVE         # what the container runs and which ports it has (tritonops/modes)
    ray: RayDriver | None = None       # a pipeline's head: Triton as the Ray cluster's driver, on the host's network
    name: str | None = None            # the container's name when not the replica's (one booted beside it)

    @property
    def container(self) -> str:
        return self.name or container_name(self.deployment, self.replica)

    @property
    def model_repository(self) -> str:
        return posixpath.join(self.release_dir, "model_repository")


def logging_digest(log: LogShipping) -> str:
    """Names the log settings a container was started for: a change restarts Triton, a fallback
    to local logs (the collector was down) does not make every later deploy retry."""
    return hashlib.sha256("\0".join(log_argv(log)).encode()).hexdigest()[:12]


def run_argv(spec: ServeSpec, log: LogShipping | None = None) -> tuple[str, ...]:
    """`docker run` for the release. `log`: other log settings than the spec's (the local fallback
    when the collector is down). tritonserver runs under the container logger (one ECS JSON object
    per line, docs/logs.md), mounted read-only from the host. With an admin key file, the file is
    mounted read-only too and the logger reads it and gives tritonserver the restricted-API flags:
    the key is in no `docker run` command line and not in `docker inspect`."""
    if spec.admin_key_file and not spec.logger_path:
        raise ValueError("the admin key is read by the container logger: give logger_path")
    argv = ["docker", "run", "--detach", "--name", spec.container,
            "--label", f"{LABEL_DEPLOYMENT}={spec.deployment}", "--label", f"{LABEL_RELEASE}={spec.release}",
            "--label", f"{LABEL_LOGGING}={logging_digest(spec.log)}",
            *(("--label", f"{LABEL_REPLICA}={spec.replica}") if spec.replica else ()),
            "--restart", spec.restart,
            "--gpus", f"\"device={','.join(str(gpu) for gpu in spec.gpus)}\""]
    for limit in spec.ulimits:
        argv += ["--ulimit", limit]
    argv += ["--shm-size", spec.shm_size] if spec.shm_size else ["--ipc", "host"]
    listen: tuple[str, ...] = ()
    if spec.ray is not None:  # the host's network: the server listens on the host's ports itself
        listen = spec.mode.listen_argv(host_ports(spec.ports), spec.ports.bind)
        if listen is None:
            raise ValueError(f"the {spec.mode.name} mode cannot serve a pipeline across hosts")
        argv += ["--network", "host", "--pid", f"container:{spec.ray.node_container}"]
        for name, value in (("RAY_AUTH_MODE", "token"), ("RAY_AUTH_TOKEN_PATH", spec.ray.token_file),
                            ("RAY_ADDRESS", spec.ray.gcs_address), ("VLLM_HOST_IP", spec.ray.node_ip)):
            argv += ["--env", f"{name}={value}"]
    else:
        bind = f"[{spec.ports.bind}]" if ":" in spec.ports.bind else spec.ports.bind  # docker's form of IPv6
        for host_port, (_, port) in zip(host_ports(spec.ports), spec.mode.ports, strict=True):
            argv += ["--publish", f"{bind}:{host_port}:{port}"]
    argv += log_argv(log or spec.log)
    for path in (spec.release_dir, *spec.weights_dirs, spec.logger_path, spec.admin_key_file,
                 spec.ray.token_file if spec.ray else None):
        if path:
            argv += ["--volume", f"{path}:{path}:ro"]
    if spec.ray is not None:
        argv += ["--volume", f"{spec.ray.temp_dir}:{RAY_TEMP_DIR}"]
    argv.append(spec.image_id)
    if spec.logger_path:
        argv += ["python3", spec.logger_path, "--host", spec.host_name, "--deployment", spec.deployment,
                 "--release", spec.release, "--models", ",".join(spec.models)]
        if spec.admin_key_file:
            argv += ["--restricted-key-file", spec.admin_key_file, "--restricted-apis", RESTRICTED_APIS,
                     "--restricted-header", ADMIN_HEADER]
        argv.append("--")
    argv += spec.mode.server_argv(spec.model_repository, spec.exit_timeout_s, spec.triton_args, spec.weights_dirs)
    return (*argv, *listen)


def host_ports(ports: Ports) -> tuple[int, ...]:
    """The replica's ports on the host, in its mode's order (release.json's `ports`)."""
    return (ports.http, ports.grpc, ports.metrics)
