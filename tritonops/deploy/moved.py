"""Every byte a deploy moved to its hosts, from its report: the image and the weights that left the controller, and
what hosts received from each other (the image relay and the weights relay). A no-op deploy moves none of them; the
no-op benches hold it to that (issue #45: they counted the image's bytes from the controller only, so a multi-host
run that relayed something host to host still said 0 bytes)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from tritonops.deploy.run import DeployReport
from tritonops.playbook.host_task import TaskOutcome
from tritonops.weights.relay import WeightsArrival
from tritonops.weights.transfer import WeightsMoved


@dataclass(frozen=True)
class BytesMoved:
    image: int = 0        # image bytes that left the controller
    weights: int = 0      # weights bytes that left the controller: the weights phase's and the weights tasks'
    relayed: Mapping[str, int] = field(default_factory=dict)  # host -> image and weights bytes from another host

    @property
    def relayed_total(self) -> int:
        return sum(self.relayed.values())

    @property
    def total(self) -> int:
        return self.image + self.weights + self.relayed_total

    def __add__(self, other: BytesMoved) -> BytesMoved:
        relayed = dict(self.relayed)
        for host, count in other.relayed.items():
            relayed[host] = relayed.get(host, 0) + count
        return BytesMoved(self.image + other.image, self.weights + other.weights, relayed)

    def summary(self) -> str:
        """What the bytes were, in words: 'image 0, weights 0 from the controller; 4,096 relayed (b 4,096)'."""
        hosts = ", ".join(f"{host} {count:,}" for host, count in sorted(self.relayed.items()) if count)
        return (f"image {self.image:,}, weights {self.weights:,} from the controller; "
                f"{self.relayed_total:,} relayed host to host" + (f" ({hosts})" if hosts else ""))

    @classmethod
    def of(cls, report: DeployReport) -> BytesMoved:
        relayed = {host: count for host, count in report.image_relayed.items() if count}
        weights_tasks = 0
        for result in report.results:
            payload = result.payload
            if isinstance(payload, WeightsArrival):  # the weights phase: from the controller or from another host
                from_hosts = payload.bytes_received - payload.bytes_from_controller
                if from_hosts:
                    relayed[payload.host] = relayed.get(payload.host, 0) + from_hosts
            elif isinstance(payload, TaskOutcome):  # a model_weights task's push
                weights_tasks += sum(outcome.bytes for outcome in payload.outcomes if isinstance(outcome, WeightsMoved))
        return cls(report.image_bytes, report.weights_bytes + weights_tasks, relayed)
