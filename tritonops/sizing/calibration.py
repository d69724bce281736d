"""Replay of real vLLM start-ups through sizing: per run the predicted and printed KV tokens and
the two verdicts (tritonops: fits / refuses; vLLM: started / refused). Pure: records and model
specs in, `Replay`s and a `Summary` out; bench/sizing_accuracy.py and the tests print and check them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import EnginePlan, SizingRequest
from tritonops.sizing.gpu_spec import GpuSpec
from tritonops.sizing.model_spec import ModelSpec
from tritonops.sizing.startup_log import StartupRecord
from tritonops.units import MIB

GOAL_MEDIAN = 0.01
GOAL_WORST = 0.03
GOAL_WORST_BYTES = 64 * MIB


@dataclass(frozen=True)
class Replay:
    record: StartupRecord
    plan: EnginePlan

    @property
    def over_promise(self) -> bool:
        """tritonops says it fits where vLLM refused, or promises more KV tokens than vLLM found."""
        if not self.record.started:
            return self.plan.fits
        return self.plan.kv_cache_tokens > (self.record.kv_tokens or 0)

    @property
    def missed_accept(self) -> bool:
        return self.record.started and not self.plan.fits

    @property
    def error(self) -> float | None:
        if not self.record.started or not self.record.kv_tokens:
            return None
        return (self.plan.kv_cache_tokens - self.record.kv_tokens) / self.record.kv_tokens

    @property
    def error_bytes(self) -> int | None:
        if not self.record.started or not self.record.kv_tokens:
            return None
        return (self.plan.kv_cache_tokens - self.record.kv_tokens) * self.plan.kv_bytes_per_token

    @property
    def within_worst(self) -> bool:
        e = self.error
        return e is None or abs(e) <= GOAL_WORST or abs(self.error_bytes or 0) <= GOAL_WORST_BYTES


@dataclass(frozen=True)
class Summary:
    runs: int
    over_promises: int
    missed_accepts: int
    median_abs_error: float | None
    worst_error: float | None
    outside_worst_goal: int

    @property
    def meets_goal(self) -> bool:
        return (self.over_promises == 0 and self.missed_accepts == 0 and self.outside_worst_goal == 0
                and (self.median_abs_error is None or self.median_abs_error <= GOAL_MEDIAN))


def replay(record: StartupRecord, model: ModelSpec, gpus: GpuSpec, vllm_version: str = "0.25.0") -> Replay:
    request = SizingRequest(model_ref=record.model, vllm_version=vllm_version,
                            tensor_parallel_size=record.tensor_parallel_size,
                            gpu_memory_utilization=record.gpu_memory_utilization,
                            max_model_len=record.max_model_len, max_num_seqs=record.max_num_seqs,
                            max_num_batched_tokens=record.max_num_batched_tokens,
                            enforce_eager=record.enforce_eager, dtype=record.dtype)
    return Replay(record, size_engine(model, gpus, request))


def summarize(replays: list[Replay]) -> Summary:
    errors = [r.error for r in replays if r.error is not None]
    return Summary(runs=len(replays), over_promises=sum(r.over_promise for r in replays),
                   missed_accepts=sum(r.missed_accept for r in replays),
                   median_abs_error=statistics.median(abs(e) for e in errors) if errors else None,
                   worst_error=max(errors, key=abs) if errors else None,
                   outside_worst_goal=sum(not r.within_worst for r in replays))
