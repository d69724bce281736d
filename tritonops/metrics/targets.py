"""The fleet as Prometheus `file_sd` targets: one target group per host, a target per replica's Triton metrics
port (one without replicas). Pure.

    [{"targets": ["10.0.0.5:8002"],
      "labels": {"host": "gpu-01", "deployment": "default", "release": "20260101T000000Z-1a2b3c4d",
                 "models": "chat,embed", "gpu_type": "NVIDIA H200", "gpus": "8"}}, ...]

`models`, not `model`: Triton's own series carry a `model` label, and a target label of the same
name would push it to `exported_model` (Prometheus' default, honor_labels false) under every query.

A deploy replaces the groups of the (deployment, host) pairs it read and keeps every other group,
so a deploy of part of a fleet (`--limit`), or of another deployment sharing the file, drops nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from tritonops.errors import InputError
from tritonops.values.ssh_target import host_address

WILDCARD_BINDS = ("", "0.0.0.0", "::", "[::]")
LABELS = ("host", "deployment", "release", "models", "gpu_type", "gpus")


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
                  targets: Iterable[HostTarget]) -> list[dict]:
    """`existing` without the groups of the `replaced` (deployment, host) pairs, plus `targets`;
    ordered by deployment and host so the file only changes when the fleet does."""
    gone = set(replaced)
    kept = [group for group in existing
            if (group["labels"].get("deployment"), group["labels"].get("host")) not in gone]
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
