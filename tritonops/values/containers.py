"""What the containers tritonops runs on hosts are called and labelled: one naming function, for what
starts a Triton container (serving/), what reads its logs (logs/) and what finds it (deploy/).

One container per deployment on a host, named `tritonops-<deployment>`, labelled with its deployment
and release (the log drivers attach the same labels to each log entry).
"""

LABEL_DEPLOYMENT = "tritonops.deployment"
LABEL_RELEASE = "tritonops.release"


def container_name(deployment: str) -> str:
    return f"tritonops-{deployment}"
