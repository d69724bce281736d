"""A pipeline member's part of a release (issue #28): the `cluster` entry of its serve settings (release.json,
so a rollback needs only the host) turned into the member's Ray node container and, on the head, the settings
that make Triton the cluster's Ray driver. Pure, tested by equality.

Every member runs its Ray node from its release's image; the node's container carries a digest of its whole
`docker run` and of the cluster's token, so a release with another image, other members or a new token restarts
the node, and one with the same node leaves it running (a rollback that changes only the model repository
restarts Triton on the head, not Ray).
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from dataclasses import dataclass, replace

from tritonops.errors import InputError
from tritonops.planning.serve_record import ClusterRecord
from tritonops.serving.container import RayDriver
from tritonops.serving.ray_node import RayNodeSpec, RayPorts, run_argv
from tritonops.values.containers import container_name

# run with `docker exec <node> python3 -c NODES_SCRIPT`: the live nodes as that node's Ray lists them, one JSON line
NODES_SCRIPT = ("import json, ray; ray.init(address='auto', logging_level='ERROR', log_to_driver=False); "
                "print(json.dumps([{'ip': n['NodeManagerAddress'], 'gpus': n['Resources'].get('GPU', 0)} "
                "for n in ray.nodes() if n['Alive']]))")
LABEL_RAY = "tritonops.ray"            # the deployment whose Ray node the container is
LABEL_RAY_SPEC = "tritonops.ray-spec"  # digest of the node's `docker run` and of the cluster's token


def ray_dir(root: str) -> str:
    """<root>/<deployment>/ray: the token (0600) and the head's session folder."""
    return posixpath.join(root, "ray")


def token_path(root: str) -> str:
    return posixpath.join(ray_dir(root), "token")


def node_container(deployment: str) -> str:
    return container_name(deployment, "ray")


@dataclass(frozen=True)
class RayMember:
    role: str                          # head | worker
    node: RayNodeSpec                  # the member's Ray node, labelled with its digest
    digest: str
    addresses: tuple[str, ...]         # every member's node address: the head waits until Ray lists them all
    gpus_per_node: int
    driver: RayDriver | None = None    # the head's: Triton as the Ray driver

    def program_input(self, deadline_s: float) -> dict:
        """What the Ray member program needs of the member (JSON: host_programs/ray_member.py)."""
        return {"role": self.role, "container": self.node.container, "run_argv": list(run_argv(self.node)),
                "digest": self.digest, "label": LABEL_RAY_SPEC, "addresses": list(self.addresses),
                "gpus_per_node": self.gpus_per_node, "node_ip": self.node.node_ip,
                "gcs": [self.node.head_ip or self.node.node_ip, self.node.ports.gcs], "deadline_s": deadline_s,
                "nodes_script": NODES_SCRIPT}


def ray_member(cluster: ClusterRecord, root: str, deployment: str, image_id: str) -> RayMember:
    """The member `cluster.host` of the cluster its release records; InputError when it is not one of its members."""
    members = {m.host: m for m in cluster.members}
    if cluster.host not in members or cluster.head not in members:
        missing = cluster.host if cluster.host not in members else cluster.head
        raise InputError(f"the release's cluster entry is incomplete (no member {missing!r})", "release.json")
    me, head = members[cluster.host], members[cluster.head]
    role = "worker" if cluster.worker else "head"
    tp = cluster.tensor_parallel_size
    spec = RayNodeSpec(role=role, node_ip=me.address, image=image_id, token_file=token_path(root),
                       num_gpus=tp, head_ip=None if role == "head" else head.address,
                       gpus=cluster.gpus or tuple(range(tp)), nccl_ifname=me.interface, gloo_ifname=me.interface,
                       object_store_bytes=cluster.object_store_bytes, container=node_container(deployment),
                       temp_dir=posixpath.join(ray_dir(root), "session") if role == "head" else None,
                       ports=RayPorts())
    digest = hashlib.sha256(json.dumps([run_argv(spec), cluster.token]).encode()).hexdigest()[:16]
    spec = replace(spec, labels=((LABEL_RAY, deployment), (LABEL_RAY_SPEC, digest)))
    driver = RayDriver(node_container=spec.container, token_file=spec.token_file, temp_dir=str(spec.temp_dir),
                       node_ip=spec.node_ip, gcs_address=spec.gcs_address) if role == "head" else None
    return RayMember(role, spec, digest, tuple(m.address for m in cluster.members), tp, driver)


def token_digest(token: str) -> str:
    """What a node's label keeps of the cluster's token: enough to notice a new one, nothing to guess it from."""
    return hashlib.sha256(token.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class ClusterView:
    """A member's view of its pipeline for `status`: its Ray node's container and, on the head, which members Ray
    lists alive (None: not asked, or Ray did not answer)."""

    name: str
    role: str
    node: str                          # the node container's state: running, exited, absent, ...
    members: tuple[tuple[str, str], ...]  # (host, address), head first
    alive: tuple[str, ...] | None = None  # addresses Ray lists alive with their GPUs

    @property
    def missing(self) -> tuple[str, ...]:
        """Members Ray does not list (the head's view)."""
        if self.alive is None:
            return ()
        return tuple(host for host, address in self.members if address not in self.alive)

    @property
    def whole(self) -> bool:
        if self.node != "running":
            return False
        return self.role == "worker" or (self.alive is not None and not self.missing)

    def said(self) -> str:
        if self.node != "running":
            return (f"its Ray node is {self.node}: the pipeline of cluster {self.name} cannot serve (the next deploy "
                    "restarts it)")
        if self.role == "worker":
            return f"Ray worker node of cluster {self.name} running"
        if self.alive is None:
            return f"cluster {self.name}: Ray did not answer on the head"
        if self.missing:
            listing = ", ".join(f"{h} ({a})" for h, a in self.members if h in self.missing)
            return (f"cluster {self.name} degraded: Ray lists {len(self.members) - len(self.missing)} of "
                    f"{len(self.members)} members, missing {listing} (the next deploy heals it)")
        return f"pipeline head of cluster {self.name}, {len(self.members)} members in Ray"


def cluster_view(cluster: ClusterRecord, node: str, nodes: list | None) -> ClusterView:
    """From the current release's cluster entry, the node container's state and NODES_SCRIPT's answer. Pure."""
    members = tuple((m.host, m.address) for m in cluster.members)
    want = cluster.tensor_parallel_size
    alive = None if nodes is None else tuple(n["ip"] for n in nodes if float(n.get("gpus") or 0) >= want)
    return ClusterView(cluster.name, "worker" if cluster.worker else "head", node, members, alive)


def parse_nodes(stdout: str) -> list | None:
    try:
        found = json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return found if isinstance(found, list) else None
