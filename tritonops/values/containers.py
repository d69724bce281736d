"""What the containers tritonops runs on hosts are called and labelled: one naming function, for what
starts a Triton container (serving/), what reads its logs (logs/) and what finds it (deploy/).

One container per deployment on a host, named `tritonops-<deployment>`, labelled with its deployment
and release (the log drivers attach the same labels to each log entry). With replicas (issue #22), one
container per replica: `tritonops-<deployment>-<replica>`, labelled with its replica too, where a replica's
name is its model's and its index (`chat-0`): both safe names, so the container name is one as well.
"""

LABEL_DEPLOYMENT = "tritonops.deployment"
LABEL_RELEASE = "tritonops.release"
LABEL_REPLICA = "tritonops.replica"


def container_name(deployment: str, replica: str | None = None) -> str:
    return f"tritonops-{deployment}" if replica is None else f"tritonops-{deployment}-{replica}"


def replica_name(model: str, index: int) -> str:
    return f"{model}-{index}"


def replica_label(index: int) -> str | None:
    """Replica `index` of a host's placement as its container's replica part: none for replica 0, which keeps
    the deployment's one container name (what ran before replicas), `<i>` for replica i."""
    return None if index == 0 else str(index)


def replica_container(deployment: str, index: int) -> str:
    """The container of replica `index`: `tritonops-<deployment>`, then `tritonops-<deployment>-<i>`."""
    return container_name(deployment, replica_label(index))
