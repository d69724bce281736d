"""One member of a Ray cluster for pipeline parallel across hosts (issue #28), as argument lists.
Pure, tested by equality (like serving/container.py's run_argv).

Every member runs `ray start ... --block` in a container of the same vllm_env image, on the host's
network (Ray and NCCL connect node to node on the host's addresses), head first, workers after.
What each value is for, and which ports to open between members: docs/ray.md.

The token is never on a command line nor in the container's environment: the host's token file is
mounted read-only and `RAY_AUTH_TOKEN_PATH` names it (Ray reads the token from that file; an empty or
unreadable file stops Ray instead of running unauthenticated).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, fields
from typing import Literal

from tritonops.errors import InputError
from tritonops.planning.cluster_plan import MIN_OBJECT_STORE_BYTES
from tritonops.values.names import safe_name
from tritonops.values.network import interface_names, node_address

ROLES = ("head", "worker")
MIN_SHM_BYTES = 10 << 30  # vLLM's multi-node guide: 10 GiB of shared memory or the host's IPC namespace
RAY_TEMP_DIR = "/tmp/ray"  # Ray's session folder in the container (its sockets, logs, the cluster's address)
_SIZE = re.compile(r"([1-9][0-9]*)([bkmg]?)")
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


@dataclass(frozen=True)
class RayPorts:
    """Ray's ports, pinned so firewall rules can name them (Ray picks random ones otherwise).
    All in 6379-10999, below Linux's ephemeral range (32768-60999): no outgoing connection takes them.
    No Ray Client server (ray://): the engine attaches on the head itself, and it needs `ray[client]`."""

    gcs: int = 6379                    # head only: the Global Control Service every node dials (--port)
    dashboard: int = 8265              # head only, when the dashboard is asked for
    node_manager: int = 6700           # every node: the raylet
    object_manager: int = 6701         # every node: object transfers between nodes
    dashboard_agent_grpc: int = 6702   # every node: the dashboard agent's gRPC
    dashboard_agent_listen: int = 6703  # every node: the dashboard agent's HTTP
    metrics_export: int = 6704         # every node: Prometheus metrics of the node
    runtime_env_agent: int = 6705      # every node: the runtime-env agent
    min_worker: int = 10002            # every node: one port per worker process (actors, tasks)
    max_worker: int = 10999

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1024 <= value <= 65535:
                raise InputError(f"Ray port {f.name} must be a whole number from 1024 to 65535, not {value!r}",
                                 "ray ports")
        if self.min_worker > self.max_worker:
            raise InputError(f"Ray worker ports {self.min_worker}-{self.max_worker}: the first is above the last",
                             "ray ports")
        single = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("min_worker", "max_worker")}
        seen: dict[int, str] = {}
        for name, port in single.items():
            if port in seen:
                raise InputError(f"Ray ports {seen[port]} and {name} are both {port}", "ray ports")
            if self.min_worker <= port <= self.max_worker:
                raise InputError(f"Ray port {name} ({port}) is inside the worker range "
                                 f"{self.min_worker}-{self.max_worker}", "ray ports")
            seen[port] = name

    def node_ports(self, role: str) -> tuple[int, ...]:
        """The single ports a node of this role listens on (the worker range comes on top)."""
        every = (self.node_manager, self.object_manager, self.dashboard_agent_grpc, self.dashboard_agent_listen,
                 self.metrics_export, self.runtime_env_agent)
        return (self.gcs, *every) if role == "head" else every


@dataclass(frozen=True)
class RayNodeSpec:
    """What one member of the cluster needs, in plain values (the cluster plan fills them in)."""

    role: Literal["head", "worker"]
    node_ip: str                       # the node's routable address: Ray's node IP and VLLM_HOST_IP
    image: str                         # the vllm_env image (its id or tag): the same on every member
    token_file: str                    # on the host: the cluster's Ray token (mounted read-only)
    num_gpus: int                      # the node's GPUs for the engine (= tensor parallel size)
    head_ip: str | None = None         # workers: the head's node_ip
    gpus: tuple[int, ...] | None = None  # device indices for --gpus; None: the first num_gpus
    ports: RayPorts = RayPorts()
    nccl_ifname: str | None = None     # NCCL_SOCKET_IFNAME (e.g. "eth0", "^lo,docker0"); None: NCCL picks
    gloo_ifname: str | None = None     # GLOO_SOCKET_IFNAME; None: Gloo picks
    shm_size: str | None = None        # e.g. "16g" (>= 10 GiB); None: --ipc host
    object_store_bytes: int | None = None  # Ray's object store; None: Ray's default (30% of memory)
    dashboard: bool = False
    container: str = "tritonops-ray"
    temp_dir: str | None = None        # on the host: mounted as the node's /tmp/ray (its session folder), so the
                                       # head's Triton container attaches to this node as a Ray driver
    labels: tuple[tuple[str, str], ...] = ()  # docker labels (name, value): what a deploy finds the node by

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InputError(f"Ray node role must be head or worker, not {self.role!r}", "ray role")
        node_address(self.node_ip, "ray node_ip")
        if self.role == "worker":
            if self.head_ip is None:
                raise InputError("a Ray worker needs the head's address", "ray head_ip")
            node_address(self.head_ip, "ray head_ip")
        elif self.head_ip is not None:
            raise InputError("the Ray head takes no head address (it is the head)", "ray head_ip")
        if not isinstance(self.token_file, str) or not posixpath.isabs(self.token_file) \
                or any(c in self.token_file for c in ":,\n\0") or ".." in self.token_file.split("/"):
            raise InputError(f"the Ray token file must be an absolute path on the host without ':' or ',', "
                             f"not {self.token_file!r}", "ray token_file")
        if isinstance(self.num_gpus, bool) or not isinstance(self.num_gpus, int) or not 0 <= self.num_gpus <= 64:
            raise InputError(f"a Ray node's GPU count must be a whole number from 0 to 64, not {self.num_gpus!r}",
                             "ray num_gpus")
        if self.gpus is not None and (len(self.gpus) != self.num_gpus or len(set(self.gpus)) != len(self.gpus)
                                      or any(isinstance(g, bool) or not isinstance(g, int) or g < 0
                                             for g in self.gpus)):
            raise InputError(f"the Ray node's GPUs {self.gpus!r} must be {self.num_gpus} distinct device indices",
                             "ray gpus")
        for value, where in ((self.nccl_ifname, "ray nccl_ifname"), (self.gloo_ifname, "ray gloo_ifname")):
            if value is not None:
                interface_names(value, where)
        if self.shm_size is not None and shm_bytes(self.shm_size) < MIN_SHM_BYTES:
            raise InputError(f"shared memory {self.shm_size!r} is below 10 GiB: give at least '10g', or none "
                             "for --ipc host", "ray shm_size")
        if self.object_store_bytes is not None and (isinstance(self.object_store_bytes, bool)
                                                    or not isinstance(self.object_store_bytes, int)
                                                    or self.object_store_bytes < MIN_OBJECT_STORE_BYTES):
            raise InputError(f"Ray's object store must be at least {MIN_OBJECT_STORE_BYTES} bytes (75 MiB), "
                             f"not {self.object_store_bytes!r}", "ray object_store_bytes")
        safe_name(self.container, "Ray container name", "ray container")
        if self.temp_dir is not None and (not posixpath.isabs(self.temp_dir) or ".." in self.temp_dir.split("/")
                                          or any(c in self.temp_dir for c in ":,\n\0")):
            raise InputError(f"the Ray session folder must be an absolute path on the host without ':' or ',', "
                             f"not {self.temp_dir!r}", "ray temp_dir")

    @property
    def gcs_address(self) -> str:
        """host:port of the head's GCS, as `ray start --address` and `ray.init` take it."""
        head = self.node_ip if self.role == "head" else str(self.head_ip)
        return f"[{head}]:{self.ports.gcs}" if ":" in head else f"{head}:{self.ports.gcs}"


def shm_bytes(value: object) -> int:
    """'16g' / '10240m' / '10737418240' -> bytes (docker's --shm-size units); else InputError."""
    match = _SIZE.fullmatch(value.lower()) if isinstance(value, str) else None
    if match is None:
        raise InputError(f"{value!r} is not a size (e.g. '16g', '10240m')", "ray shm_size")
    return int(match.group(1)) * _UNITS[match.group(2)]


def start_argv(spec: RayNodeSpec) -> tuple[str, ...]:
    """`ray start ... --block`: the node in the foreground, so the container lives as long as Ray."""
    p = spec.ports
    argv = ["ray", "start", "--block", "--disable-usage-stats", f"--node-ip-address={spec.node_ip}"]
    if spec.role == "head":
        argv += ["--head", f"--port={p.gcs}"]
        argv += (["--include-dashboard=true", f"--dashboard-host={spec.node_ip}", f"--dashboard-port={p.dashboard}"]
                 if spec.dashboard else ["--include-dashboard=false"])
    else:
        argv.append(f"--address={spec.gcs_address}")
    argv += [f"--node-manager-port={p.node_manager}", f"--object-manager-port={p.object_manager}",
             f"--dashboard-agent-grpc-port={p.dashboard_agent_grpc}",
             f"--dashboard-agent-listen-port={p.dashboard_agent_listen}", f"--metrics-export-port={p.metrics_export}",
             f"--runtime-env-agent-port={p.runtime_env_agent}", f"--min-worker-port={p.min_worker}",
             f"--max-worker-port={p.max_worker}", f"--num-gpus={spec.num_gpus}"]
    if spec.object_store_bytes is not None:
        argv.append(f"--object-store-memory={spec.object_store_bytes}")
    return tuple(argv)


def node_env(spec: RayNodeSpec) -> tuple[tuple[str, str], ...]:
    """The node's environment (name, value), in a fixed order. No secret: the token stays in its file."""
    env = [("RAY_AUTH_MODE", "token"), ("RAY_AUTH_TOKEN_PATH", spec.token_file), ("VLLM_HOST_IP", spec.node_ip)]
    if spec.nccl_ifname is not None:
        env.append(("NCCL_SOCKET_IFNAME", spec.nccl_ifname))
    if spec.gloo_ifname is not None:
        env.append(("GLOO_SOCKET_IFNAME", spec.gloo_ifname))
    return tuple(env)


def run_argv(spec: RayNodeSpec) -> tuple[str, ...]:
    """`docker run` for the node's container: host network, shared memory, its GPUs, the token file."""
    gpus = spec.gpus if spec.gpus is not None else tuple(range(spec.num_gpus))
    argv = ["docker", "run", "--detach", "--name", spec.container, "--network", "host", "--restart", "no"]
    for name, value in spec.labels:
        argv += ["--label", f"{name}={value}"]
    argv += ["--shm-size", spec.shm_size] if spec.shm_size else ["--ipc", "host"]
    if gpus:
        argv += ["--gpus", f"\"device={','.join(str(g) for g in gpus)}\""]
    for name, value in node_env(spec):
        argv += ["--env", f"{name}={value}"]
    argv += ["--volume", f"{spec.token_file}:{spec.token_file}:ro"]
    if spec.temp_dir is not None:
        argv += ["--volume", f"{spec.temp_dir}:{RAY_TEMP_DIR}"]
    argv.append(spec.image)
    return (*argv, *start_argv(spec))
