"""What the rollout planner (serving/replica_rollout.py) reads of a host, asked as facts (facts.queries) and parsed
here: the deployment's containers in every state (host_programs/deployment_containers.py) and the GPU processes
that are none of the deployment's (host_programs/gpu_holders.py). Pure: the queries and the parsers."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tritonops import host_programs
from tritonops.errors import TritonopsError
from tritonops.facts.queries import CommandQuery
from tritonops.serving.replica_rollout import ContainerFact


def containers_query(deployment: str) -> CommandQuery:
    return CommandQuery(host_programs.argv("deployment_containers", deployment))


@dataclass(frozen=True)
class ContainerState:
    """One of the deployment's containers as the listing tells it."""
    release: str | None
    running: bool
    image: str | None
    restarts: int
    logging: str | None
    ports: tuple[int, ...] = ()  # the host ports it publishes

    def fact(self, image_id: str, logging: str) -> ContainerFact:
        """As the planner reads it: `as_asked` where it runs the image `image_id` with the log settings whose digest
        is `logging`."""
        return ContainerFact(self.release, self.running, self.image == image_id and self.logging == logging, self.ports)

    def runs(self, release: str, image_id: str, logging: str) -> bool:
        """Running `release` as asked."""
        return self.running and self.release == release and self.fact(image_id, logging).as_asked

    def words(self) -> list[str]:
        """Its release, running, image, restarts and log settings' digest, as operations/restarts.py reads them."""
        return [self.release or "", "true" if self.running else "false", self.image or "", str(self.restarts),
                self.logging or ""]


def parse_container_states(stdout: str) -> dict[str, ContainerState]:
    """The deployment's containers by name, from the listing program's answer."""
    try:
        return {name: ContainerState(c.get("release") or None, c.get("running") is True, c.get("image"),
                                     int(c.get("restarts") or 0), c.get("logging"),
                                     tuple(p for p in c.get("ports") or () if isinstance(p, int)))
                for name, c in json.loads(stdout).items()}
    except (ValueError, AttributeError, TypeError):
        raise TritonopsError(f"the deployment's containers could not be read: {stdout[:200]!r}") from None


def parse_containers(stdout: str, image_id: str, logging: str) -> dict[str, ContainerFact]:
    """The deployment's containers by name as the planner reads them (ContainerState.fact)."""
    return {name: state.fact(image_id, logging) for name, state in parse_container_states(stdout).items()}


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
