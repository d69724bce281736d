"""What a host serves, as one typed record (issue #42): its replicas (index, GPUs, ports), the address they bind, the
serving mode, what the gate waits for, and a pipeline's membership. It is release.json's `serve`; made once from the
host plan, read back by everything that starts, gates, reads or balances a release.

Versioned. `ServeRecord.from_release` reads every `serve` tritonops has written: version 2 (this record), and the
plain mapping before it (no version; before replicas a single container on `gpus` at the host's ports, which the
caller passes; before modes no `frontend`; before binds no `bind`). What none of them could hold is a one-line
`ServeRecordError`. Pure: no I/O.
"""

from __future__ import annotations

import ipaddress
import posixpath
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tritonops.modes.base import ServingMode
from tritonops.modes.choice import DEFAULT as DEFAULT_MODE
from tritonops.modes.choice import MODES
from tritonops.values.containers import replica_container

VERSION = 2          # 1: the plain mapping written before this record (it has no `version`)
MAX_GPU_INDEX = 1023
Port = int


class ServeRecordError(ValueError):
    """A release's `serve` that no tritonops wrote: one line, naming the field."""


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    @classmethod
    def from_json(cls, data: Any):
        """The record from its JSON form (lists for its tuples); pydantic's ValidationError when it is not one."""
        return cls.model_validate(_as_tuples(data))


def _gpu_indices(gpus: tuple[int, ...]) -> tuple[int, ...]:
    if any(g < 0 or g > MAX_GPU_INDEX for g in gpus) or len(set(gpus)) != len(gpus):
        raise ValueError(f"GPU indices must be distinct, 0 to {MAX_GPU_INDEX}")
    return gpus


def _port_numbers(ports: tuple[int, int, int]) -> tuple[int, int, int]:
    if any(p < 1 or p > 65535 for p in ports) or len(set(ports)) != 3:
        raise ValueError("ports must be three distinct numbers from 1 to 65535")
    return ports


class ReplicaSlot(_Record):
    """Where a replica can run: its GPUs and its ports in the mode's order (HTTP, gRPC, metrics)."""
    gpus: tuple[int, ...] = Field(min_length=1)
    ports: tuple[Port, Port, Port]

    _gpus = field_validator("gpus")(_gpu_indices)
    _ports = field_validator("ports")(_port_numbers)


class ReplicaRecord(_Record):
    """One replica of the host's placement: where it runs (its GPUs and ports), and its `standby` slot: spare GPUs
    and ports where a new release of it boots while the old one still serves (Kamal's order; None: the host has no
    spare GPUs for it, or the deployment said tritonops_boot_first: false). A rollout that boots it there records
    the two slots swapped (`swapped`); the release's identity reads them in the planned order (`planned`)."""
    index: int = Field(ge=0, le=MAX_GPU_INDEX)
    gpus: tuple[int, ...] = Field(min_length=1)
    ports: tuple[Port, Port, Port]
    standby: ReplicaSlot | None = None

    _gpus = field_validator("gpus")(_gpu_indices)
    _ports = field_validator("ports")(_port_numbers)

    def container(self, deployment: str) -> str:
        return replica_container(deployment, self.index)

    @property
    def slot(self) -> ReplicaSlot:
        return ReplicaSlot(gpus=self.gpus, ports=self.ports)

    def swapped(self) -> ReplicaRecord:
        """The replica running on its standby slot (its slot the standby one)."""
        if self.standby is None:
            return self
        return ReplicaRecord(index=self.index, gpus=self.standby.gpus, ports=self.standby.ports, standby=self.slot)

    def planned(self) -> ReplicaRecord:
        """The replica as planning placed it, wherever it runs now: the standby slot is the one whose ports come
        after (a replica's standby ports are those of the index past the last replica)."""
        return self.swapped() if self.standby is not None and self.standby.ports[0] < self.ports[0] else self


class ClusterMemberRecord(_Record):
    """A pipeline stage's host: where the others reach it, its stage and its layers (first, last)."""
    host: str = Field(min_length=1)
    address: str = Field(min_length=1)
    stage: int = Field(ge=0)
    layers: tuple[int, int]
    interface: str | None = None


class ClusterRecord(_Record):
    """A pipeline across hosts as one member records it (planning.cluster.Cluster.to_release, plus this member's
    host and GPUs, the digest of the cluster's token, never the token, and the Ray object store's size)."""
    name: str = Field(min_length=1)
    head: str = Field(min_length=1)
    workers: tuple[str, ...]
    tensor_parallel_size: int = Field(ge=1)
    pipeline_parallel_size: int = Field(ge=2)
    members: tuple[ClusterMemberRecord, ...] = Field(min_length=2)
    host: str = Field(min_length=1)
    gpus: tuple[int, ...]
    token: str
    object_store_bytes: int | None = None

    @property
    def worker(self) -> bool:
        return self.host != self.head


class ServeRecord(_Record):
    version: Literal[2] = VERSION
    models: tuple[str, ...] = Field(min_length=1)
    replicas: tuple[ReplicaRecord, ...]
    bind: str | None = None               # None: a release made before binds were recorded
    weights_dirs: tuple[str, ...]
    deadline_s: float = Field(gt=0, le=86400)
    kv_cache_tokens: int = Field(ge=0)
    frontend: str = DEFAULT_MODE
    cluster: ClusterRecord | None = None

    @field_validator("models")
    @classmethod
    def _model_names(cls, models: tuple[str, ...]) -> tuple[str, ...]:
        if not all(models):
            raise ValueError("model names must not be empty")
        return models

    @field_validator("bind")
    @classmethod
    def _an_address(cls, bind: str | None) -> str | None:
        if bind is not None:
            try:
                if str(ipaddress.ip_address(bind)) != bind:
                    raise ValueError
            except ValueError:
                raise ValueError(f"{bind!r} is not an IP address") from None
        return bind

    @field_validator("weights_dirs")
    @classmethod
    def _absolute(cls, folders: tuple[str, ...]) -> tuple[str, ...]:
        if not all(posixpath.isabs(folder) for folder in folders):
            raise ValueError("weights folders must be absolute paths")
        return folders

    @field_validator("frontend")
    @classmethod
    def _a_mode(cls, name: str) -> str:
        if name not in MODES:
            raise ValueError(f"{name!r} is not a serving mode tritonops knows ({', '.join(MODES)})")
        return name

    @model_validator(mode="after")
    def _placement(self) -> ServeRecord:
        if [r.index for r in self.replicas] != list(range(len(self.replicas))):
            raise ValueError("replicas must be numbered 0, 1, ... in order")
        if not self.replicas and not (self.cluster is not None and self.cluster.worker):
            raise ValueError("replicas must place at least one replica (only a pipeline's worker places none)")
        return self

    @property
    def mode(self) -> ServingMode:
        """How its replicas are started, checked and called (tritonops/modes)."""
        return MODES[self.frontend]

    @property
    def gpus(self) -> tuple[int, ...]:
        """Replica 0's GPUs (a pipeline worker's: its Ray node's), what release.json's `gpus` says to a tritonops
        that reads no replicas."""
        if self.replicas:
            return self.replicas[0].gpus
        return self.cluster.gpus if self.cluster is not None else ()

    def to_release(self) -> dict[str, Any]:
        """release.json's `serve`, with `gpus` for the readers that came before replicas (no `cluster` key off a
        pipeline, no `standby` key on a replica that has none)."""
        written = self.model_dump(mode="json")
        written["replicas"] = [r.model_dump(mode="json", exclude_none=True) for r in self.replicas]
        if self.cluster is None:
            del written["cluster"]
        return {**written, "gpus": list(self.gpus)}

    def with_replica(self, replica: ReplicaRecord) -> ServeRecord:
        """The record with `replica` in place of the one of its index."""
        return self.model_copy(update={"replicas": tuple(replica if r.index == replica.index else r
                                                         for r in self.replicas)})

    @classmethod
    def from_release(cls, data: Any, *, host_ports: Mapping[str, int]) -> ServeRecord:
        """A release's `serve` as any tritonops wrote it; `host_ports`: each port role (http, grpc, metrics, openai)
        to the host's port from its variables now, for a release made before replicas, which recorded none.
        ServeRecordError when it is none."""
        if not isinstance(data, Mapping):
            raise ServeRecordError("serve is not a mapping")
        version = data.get("version", 1)
        if version not in (1, VERSION):
            raise ServeRecordError(f"serve.version {version!r} is not one this tritonops reads (1, {VERSION})")
        fields = {key: value for key, value in data.items() if key != "gpus"}
        if version == 1:
            fields = _migrated(data, host_ports)
        try:
            return cls.model_validate(_as_tuples(fields))
        except ValidationError as err:
            raise ServeRecordError(_one_line(err)) from None


def _migrated(data: Mapping[str, Any], host_ports: Mapping[str, int]) -> dict[str, Any]:
    """A version 1 `serve`: its keys as they are; one replica on `gpus` at the host's ports (in its mode's order)
    when it has none (a pipeline's worker keeps its empty list)."""
    fields = {key: value for key, value in data.items() if key != "gpus"}
    fields["version"] = VERSION
    if "replicas" not in data:
        mode = MODES.get(data.get("frontend") or DEFAULT_MODE, MODES[DEFAULT_MODE])  # a bad name: said by the check
        fields["replicas"] = [{"index": 0, "gpus": data.get("gpus"),
                               "ports": [host_ports.get(role, port) for role, port in mode.ports]}]
    return fields


def _as_tuples(value: Any) -> Any:
    """JSON's lists as the record's tuples (strict mode takes no list for a tuple)."""
    if isinstance(value, list):
        return tuple(_as_tuples(item) for item in value)
    if isinstance(value, Mapping):
        return {key: _as_tuples(item) for key, item in value.items()}
    return value


def _one_line(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    said = first["msg"].removeprefix("Value error, ")  # a validator's own message, as it says it
    return f"serve.{where}: {said}" if where else f"serve: {said}"
