"""What a release's rollout did on a host, as data: made once where the rollout ends (the serve step,
operations/serve_rollout.py), then read by field everywhere after (the task's result, the deploy events, the
CLI). Its one-line texts are made from the fields, never read back. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Sequence
from typing import Literal

from tritonops.serving.verdict import classify, kv_shortfall, kv_warning

ServeStatus = Literal["switched", "unchanged", "rolled_back", "refused", "failed"]


@dataclass(frozen=True)
class ServeOutcome:
    status: ServeStatus
    release: str                    # the release the program was asked to start
    reason: str = ""                # why it does not serve: the log's known failure, else the program's words
    reason_kind: str = ""           # that failure's kind (serving.verdict.KINDS), "" when not recognised
    previous: str | None = None     # the release that served before
    kept_as: str | None = None      # the failed container's name, kept for a look
    rollback_why: str | None = None  # why the previous release did not come back (status failed)
    ready_s: float | None = None    # seconds until every model was ready (switched)
    kv_reported: int | None = None  # vLLM's own KV-cache size line
    kv_predicted: int = 0           # the plan's
    shipping: str = ""              # log shipping that fell back to the host's local logs, and why
    found_serving: bool = False     # asked to check (a pipeline's member), found all as asked: nothing done
    ray_worker: bool = False        # a pipeline's worker: its Ray node joined the head (no Triton, no gate of its own)
    ray_restarted: bool = False     # a pipeline member's Ray node was (re)started

    @property
    def served(self) -> bool:
        return self.status in ("switched", "unchanged")

    @property
    def note(self) -> str | None:
        """Said after the step's description when it served: the gate's figures, degraded shipping."""
        notes = []
        if self.ray_worker and self.served:
            return "its Ray node " + ("started and " if self.ray_restarted else "") + "joined the head's cluster"
        if self.ray_restarted:
            notes.append("Ray head node started")
        if self.status == "switched":
            notes.append(f"gate passed: {self.gate_figures}")
            if self.kv_shortfall is not None:
                notes.append(kv_warning(self.kv_predicted, self.kv_reported, self.kv_shortfall))
        if self.shipping:
            notes.append(f"log shipping degraded: {self.shipping}")
        return "; ".join(notes) or None

    @property
    def kv_shortfall(self) -> float | None:
        """How far vLLM's KV cache fell below the plan's, beyond the sizing's tolerance (else None)."""
        return kv_shortfall(self.kv_predicted, self.kv_reported)

    @property
    def gate_figures(self) -> str:
        """How the gate found the new release: its time to ready and vLLM's KV cache against the plan's."""
        ready = f"ready in {self.ready_s:.1f} s, " if self.ready_s is not None else ""
        reported = f"{self.kv_reported:,}" if self.kv_reported is not None else "not reported"
        return f"{ready}KV cache {reported} tokens (planned {self.kv_predicted:,})"

    @property
    def serving_release(self) -> str:
        """The release serving after the program: the previous one when it rolled back."""
        if self.status == "rolled_back" and self.previous:
            return self.previous
        return self.release

    @property
    def failure(self) -> str | None:
        """None when the release serves; else the task's one-line failure."""
        if self.served:
            return None
        if self.status == "rolled_back":
            return (f"rolled back: {self.reason} (release {self.previous} serves again; the failed container is "
                    f"kept as {self.kept_as})")
        if self.status == "refused":
            return f"refused before anything was stopped: {self.reason}"
        extra = f"; the previous release did not come back either: {self.rollback_why}" if self.previous else ""
        return f"{self.reason}{extra}"


def failure_reason(log: Sequence[str], why: str) -> tuple[str, str]:
    """Why a release does not serve, and that failure's kind: the log's known failure (serving.verdict), else the
    failure's own words (kind "")."""
    found = classify("\n".join(log)) or classify(why)
    return (str(found), found.kind) if found else (why or "failed", "")
