"""Results as data: what happened on each host, for the CLI to render.

Modelled on Ansible's per-task result (ok/changed/failed/unreachable, msg, diff)
and fabric's GroupResult (every host maps to a result, a failure never hides
the others).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Literal

Status = Literal["ok", "changed", "failed", "unreachable", "skipped"]


@dataclass(frozen=True)
class HostResult:
    host: str
    status: Status
    msg: str = ""
    data: Any = None
    diff: str | None = None
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "changed", "skipped")

    @property
    def changed(self) -> bool:
        return self.status == "changed"

    @property
    def failed(self) -> bool:
        return self.status in ("failed", "unreachable")


@dataclass(frozen=True)
class GroupResult:
    """One result per host, in the order the hosts were given."""

    results: tuple[HostResult, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, results: Iterable[HostResult]) -> "GroupResult":
        return cls(tuple(results))

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, host: str) -> HostResult:
        for result in self.results:
            if result.host == host:
                return result
        raise KeyError(host)

    @property
    def succeeded(self) -> tuple[HostResult, ...]:
        return tuple(r for r in self.results if not r.failed)

    @property
    def failed(self) -> tuple[HostResult, ...]:
        return tuple(r for r in self.results if r.failed)

    @property
    def all_ok(self) -> bool:
        return not self.failed
