"""The fleet as Prometheus `file_sd` targets: one target group per host, a target per replica's Triton metrics
port (one without replicas). Pure.

    [{"targets": ["10.0.0.5:8002"],
      "labels": {"host": "gpu-01", "deployment": "default", "release": "20260101T000000Z-1a2b3c4d",
                 "models": "chat,embed", "gpu_type": "NVIDIA H200", "gpus": "8"}}, ...]

`models`, not `model`: Triton's own series carry a `model` label, and a target label of the same
name would push it to `exported_model` (Prometheus' default, honor_labels false) under every query.

A deploy replaces the groups of the (deployment, host) pairs it read and keeps every other group,
so a deploy of part of a fleet (`--limit`), or of another deployment sharing the file, drops nothing.

A balancer (issue #31) is one group too, its target HAProxy's Prometheus exporter (:8405), labelled
`role: balancer`, the deployments whose doors it holds, and its `queue_timeout_ms` (the alert rules
compare HAProxy's queue time with it: metrics/rules.py). One group per balancer, whatever the number of
deployments behind it, so its exporter is scraped once; each series names its deployment's backend
(`proxy="tritonops_<deployment>_http"`), which the rules read the deployment from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from tritonops.errors import InputError
from tritonops.values.ssh_target import host_address

WILDCARD_BINDS = ("", "0.0.0.0", "::", "[::]")
LABELS = ("host", "deployment", "release", "models", "gpu_type", "gpus")
BALANCER_ROLE = "balancer"  # the `role` label of a balancer's group; Triton's groups have no `role`


@dataclass(frozen=True)
class HostTarget:
    host: str
    address: str       # what Prometheus dials
    port: int
    deployment: str
    release: str
    models: tuple[str, ...]
    gpu_type: str      # the first GPU's name as NVML reports it; "" on a host without one
    gpus: int
    replica_ports: tuple[int, ...] = ()  # the metrics ports of replicas 1.. of the release (issue #22)

    def group(self) -> dict[str, Any]:
        return {"targets": [endpoint(self.address, port) for port in (self.port, *self.replica_ports)],
                "labels": {"host": self.host, "deployment": self.deployment, "release": self.release,
                           "models": ",".join(self.models), "gpu_type": self.gpu_type, "gpus": str(self.gpus)}}


@dataclass(frozen=True)
class BalancerTarget:
    host: str
    address: str       # what Prometheus dials
    port: int          # HAProxy's exporter (render.door_config.BalancerGlobals.metrics_port)
    deployments: tuple[str, ...]  # the deployments whose doors it holds
    queue_timeout_ms: int         # the door's tritonops_queue_timeout_ms

    def group(self) -> dict[str, Any]:
        return {"targets": [endpoint(self.address, self.port)],
                "labels": {"host": self.host, "role": BALANCER_ROLE, "deployment": ",".join(self.deployments),
                           "queue_timeout_ms": str(self.queue_timeout_ms)}}


def is_balancer_group(group: dict) -> bool:
    return group.get("labels", {}).get("role") == BALANCER_ROLE


def queue_timeouts(groups: Iterable[dict]) -> tuple[int, ...]:
    """The distinct queue_timeout_ms of the balancers in `groups` (a file's groups), in order; a hand-edited
    label that is not a whole number is left out (Prometheus still scrapes the target)."""
    found = {int(group["labels"]["queue_timeout_ms"]) for group in groups if is_balancer_group(group)
             and str(group["labels"].get("queue_timeout_ms", "")).isdigit()}
    return tuple(sorted(found))


def scrape_address(name: str, connection_host: str, bind_address: str | None, override: str | None,
                   where: str | None = None) -> str:
    """Where Prometheus reaches a host's metrics port: `tritonops_metrics_address` when set, else the
    address Triton is bound to when it is not a wildcard, else the address SSH dials (ansible_host),
    else the inventory name. Checked like a host address (it is written into Prometheus' config)."""
    for value in (override, None if (bind_address or "") in WILDCARD_BINDS else bind_address, connection_host, name):
        if value:
            return host_address(str(value), where)
    raise InputError("no address to scrape", where)


def endpoint(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def merged_groups(existing: Iterable[dict], replaced: Iterable[tuple[str, str]],
                  targets: Iterable[HostTarget | BalancerTarget], balancers: Iterable[str] = ()) -> list[dict]:
    """`existing` without the groups of the `replaced` (deployment, host) pairs and of the `balancers` (by host
    name, whatever deployments they listed), plus `targets`; ordered by deployment and host so the file only
    changes when the fleet does."""
    gone, doors = set(replaced), set(balancers)
    kept = [group for group in existing
            if (group["labels"].get("deployment"), group["labels"].get("host")) not in gone
            and not (is_balancer_group(group) and group["labels"].get("host") in doors)]
    groups = kept + [target.group() for target in targets]
    return sorted(groups, key=lambda group: (group["labels"].get("deployment", ""), group["labels"].get("host", ""),
                                             group["targets"]))


def render_targets(groups: list[dict]) -> str:
    return json.dumps(groups, indent=2, sort_keys=True) + "\n"


def read_targets(text: str, path: str) -> list[dict]:
    """A targets file as written before (by tritonops or by hand): a JSON list of
    {"targets": [str, ...], "labels": {str: str}}; anything else is an error naming the file."""
    if not text.strip():
        return []
    try:
        groups = json.loads(text)
    except ValueError as err:
        raise InputError(f"not a Prometheus file_sd JSON file (line {getattr(err, 'lineno', '?')}: "
                         f"{getattr(err, 'msg', err)}); fix or remove it", path) from None
    if not isinstance(groups, list):
        raise InputError("a file_sd file holds a JSON list of target groups; fix or remove it", path)
    for number, group in enumerate(groups, 1):
        targets = group.get("targets") if isinstance(group, dict) else None
        labels = group.get("labels", {}) if isinstance(group, dict) else None
        if (not isinstance(targets, list) or not all(isinstance(t, str) for t in targets)
                or not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values())):
            raise InputError(f"target group {number} is not {{\"targets\": [...], \"labels\": {{...}}}} "
                             "with strings; fix or remove it", path)
    return groups
