"""Results as data: what happened on each host, for the CLI to render.

One vocabulary for every command (probe, image, lab, deploy), modelled on Ansible's per-task result
(ok / changed / failed / unreachable / skipped, msg, diff) and its PLAY RECAP (`Recap`), and on
fabric's GroupResult (every host maps to a result; a failure never hides the others). A result's
`payload` is typed by the command that made it (probe: HostFacts; image: ImageOutcome; deploy: the
task's own data), never a bag of Any.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, Generic, Iterable, Literal, TypeVar

Status = Literal["ok", "changed", "failed", "unreachable", "skipped"]
STATUSES: tuple[Status, ...] = ("ok", "changed", "unreachable", "failed", "skipped")
P = TypeVar("P")


@dataclass(frozen=True)
class HostResult(Generic[P]):
    host: str
    status: Status
    msg: str = ""
    payload: P | None = None
    diff: str | None = None
    elapsed_s: float = 0.0
    task: str = ""  # which task or phase this is the result of ("" for a one-phase command)

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
class GroupResult(Generic[P]):
    """One result per host, in the order the hosts were given."""

    results: tuple[HostResult[P], ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, results: Iterable[HostResult[P]]) -> "GroupResult[P]":
        return cls(tuple(results))

    def __iter__(self):
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, host: str) -> HostResult[P]:
        for result in self.results:
            if result.host == host:
                return result
        raise KeyError(host)

    @property
    def succeeded(self) -> tuple[HostResult[P], ...]:
        return tuple(r for r in self.results if not r.failed)

    @property
    def failed(self) -> tuple[HostResult[P], ...]:
        return tuple(r for r in self.results if r.failed)

    @property
    def all_ok(self) -> bool:
        return not self.failed


@dataclass(frozen=True)
class Progress:
    """How far one host's part of a long step has come, while it runs (the CLI draws it live): `done` bytes of
    `total` (None: not known), or a step without bytes (a build) that started (`done` 0) and finished."""

    host: str
    what: str                  # "build", "receive", "weights"
    done: int = 0
    total: int | None = None
    note: str = ""             # e.g. "from img-build", the content tag being built
    finished: bool = False


@dataclass
class Recap:
    """Per host, how many results ended in each status (Ansible's PLAY RECAP), in first-seen order."""

    counts: dict[str, Counter] = field(default_factory=dict)

    @classmethod
    def of(cls, results: Iterable[HostResult]) -> "Recap":
        recap = cls()
        for result in results:
            recap.add(result)
        return recap

    def add(self, result: HostResult) -> None:
        self.counts.setdefault(result.host, Counter())[result.status] += 1

    def host_failed(self, host: str) -> bool:
        counts = self.counts.get(host, Counter())
        return bool(counts["failed"] or counts["unreachable"])

    @property
    def all_ok(self) -> bool:
        return not any(self.host_failed(host) for host in self.counts)

    def rows(self) -> list[tuple[str, dict[str, int]]]:
        return [(host, {status: counts[status] for status in STATUSES}) for host, counts in self.counts.items()]

    def totals(self) -> dict[str, int]:
        """How many results ended in each status, over every host (statuses that occurred only)."""
        summed: Counter = Counter()
        for counts in self.counts.values():
            summed.update(counts)
        return {status: summed[status] for status in STATUSES if summed[status]}

    def to_json(self) -> dict[str, dict[str, int]]:
        return dict(self.rows())


def json_data(value: Any) -> Any:
    """A typed payload as JSON data: dataclasses as objects (fields in their order), tuples as lists,
    mapping keys as strings, records (pydantic models) as their JSON form; None and plain values as they are."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    if callable(getattr(value, "model_dump", None)) and not isinstance(value, type):  # pydantic, not imported here
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(key): json_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_data(item) for item in value]
    return value
