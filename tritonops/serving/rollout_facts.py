"""What the rollout planner (serving/replica_rollout.py) reads of a host, asked as facts (facts.queries) and parsed
here: the deployment's containers in every state (host_programs/deployment_containers.py) and the GPU processes
that are none of the deployment's (host_programs/gpu_holders.py). Pure: the queries and the parsers."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from tritonops import host_programs
from tritonops.errors import TritonopsError
from tritonops.facts.queries import CommandQuery
from tritonops.serving.replica_rollout import ContainerFact


def containers_query(deployment: str) -> CommandQuery:
    return CommandQuery(host_programs.argv("deployment_containers", deployment))


def parse_containers(stdout: str, image_id: str, logging: str) -> dict[str, ContainerFact]:
    """The deployment's containers by name; `as_asked` where one runs the image `image_id` with the log settings
    whose digest is `logging`."""
    try:
        found = json.loads(stdout)
        return {name: ContainerFact(c.get("release") or None, c.get("running") is True,
                                    c.get("image") == image_id and c.get("logging") == logging)
                for name, c in found.items()}
    except (ValueError, AttributeError, TypeError):
        raise TritonopsError(f"the deployment's containers could not be read: {stdout[:200]!r}") from None


def gpu_holders_query(processes: Iterable[Mapping], deployment: str) -> CommandQuery:
    """Which of the probe's GPU processes ({gpu, pid, bytes}) still run and are none of the deployment's."""
    listed = [{"gpu": int(p["gpu"]), "pid": int(p["pid"]), "bytes": int(p.get("bytes") or 0)} for p in processes]
    return CommandQuery(host_programs.argv("gpu_holders", json.dumps(listed, sort_keys=True), deployment))


def parse_holders(stdout: str) -> dict[int, str]:
    """GPU -> who holds it ("pid 4242 (0.2 GiB)", several joined by ", ")."""
    try:
        held: dict[int, list[str]] = {}
        for p in json.loads(stdout):
            held.setdefault(int(p["gpu"]), []).append(f"pid {int(p['pid'])} ({int(p['bytes']) / 2**30:.1f} GiB)")
    except (ValueError, KeyError, TypeError):
        raise TritonopsError(f"the GPUs' processes could not be read: {stdout[:200]!r}") from None
    return {gpu: ", ".join(who) for gpu, who in held.items()}
