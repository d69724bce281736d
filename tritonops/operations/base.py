"""What an operation is, for the playbook engine: a name, strict arguments, facts, steps."""

from __future__ import annotations

from typing import ClassVar, Iterable, Protocol

from pydantic import BaseModel, ConfigDict

from tritonops.facts.queries import Facts, Query
from tritonops.operations.steps import Step


class Args(BaseModel):
    """Base of every operation's arguments: unknown keys are errors, values are checked by type."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class Operation(Protocol):
    name: ClassVar[str]
    Args: ClassVar[type[Args]]

    def facts(self, args: Args) -> Iterable[Query]:
        """The facts `steps` needs about the host (all read in one round trip)."""

    def steps(self, args: Args, facts: Facts) -> Iterable[Step]:
        """Only the steps still needed; nothing when the host already matches. Pure."""
