"""What `size` and `plan` share: the engine-argument flags (-> `SizingRequest`) and the table
that shows an `EnginePlan`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.output import line, styled
from tritonops.sizing.default_version import DEFAULT_VLLM_VERSION

if TYPE_CHECKING:
    from tritonops.sizing.engine_plan import EnginePlan, SizingRequest


def add_engine_options(parser) -> None:
    """The engine arguments `size` and `plan` share. Given ones are checked, not chosen."""
    g = parser.add_argument_group("engine arguments (left out: chosen, or vLLM's default for the version)")
    g.add_argument("--vllm-version", default=None, metavar="V",
                   help=f"vLLM version to size for (default {DEFAULT_VLLM_VERSION}, the pinned image's)")
    # numbers are read as text and checked by request_numbers (one message for every bad value)
    g.add_argument("--tensor-parallel-size", metavar="T")
    g.add_argument("--gpu-memory-utilization", metavar="U", help="in (0, 1]")
    g.add_argument("--max-model-len", metavar="L",
                   help="check this length instead of choosing one ('auto': choose; the plan shows vLLM's auto-fit)")
    g.add_argument("--max-context", metavar="L", help="cap for the chosen max_model_len")
    g.add_argument("--max-num-seqs", metavar="N")
    g.add_argument("--max-num-batched-tokens", metavar="B")
    g.add_argument("--dtype", choices=("auto", "float16", "half", "bfloat16", "float32"))
    g.add_argument("--kv-cache-dtype", choices=("auto", "fp8", "fp8_e4m3", "fp8_e5m2"))
    g.add_argument("--enforce-eager", action="store_true", default=None)
    g.add_argument("--swap-space-gib", metavar="G",
                   help="CPU memory for the KV cache, GiB per GPU (0: none): swap_space where the vLLM "
                        "version has it, else CPU KV-cache offloading (kv_offloading_size)")
    g.add_argument("--prefer", choices=("fewest-gpus", "latency"), default="fewest-gpus",
                   help="fewest-gpus: the smallest TP that holds the target context (default); "
                        "latency: the largest TP that fits")
    g.add_argument("--concurrency", default=1, metavar="N",
                   help="full-length requests the KV cache must hold at once (default 1)")


# (pipeline_parallel_size: `size --nodes` only; `plan` takes it from the inventory)
_NUMBER_FLAGS = ("tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "max_model_len",
                 "max_context", "max_num_seqs", "max_num_batched_tokens", "concurrency", "swap_space_gib")


def request_from_args(args, model_ref: str) -> SizingRequest:
    from tritonops.sizing.engine_plan import SizingRequest
    from tritonops.sizing.request_numbers import flag, request_number

    # --max-model-len auto (or -1): tritonops chooses, and the plan shows vLLM's own auto-fit next to it
    auto = str(getattr(args, "max_model_len", "")).strip().lower() in ("auto", "-1")
    numbers = {field: request_number(field, getattr(args, field), flag(field))
               for field in _NUMBER_FLAGS if getattr(args, field, None) is not None
               and not (field == "max_model_len" and auto)}
    return SizingRequest(
        model_ref=model_ref, vllm_version=args.vllm_version or DEFAULT_VLLM_VERSION, dtype=args.dtype,
        kv_cache_dtype=args.kv_cache_dtype, enforce_eager=args.enforce_eager, prefer=args.prefer, **numbers)


def print_plan(out, plan: EnginePlan, title: str | None = None) -> None:
    from rich.table import Table

    from tritonops.sizing.explain import headline, memory_line, plan_rows

    out.print(styled(title or headline(plan), "bold" if plan.fits else "bold red"))
    table = Table(show_header=True, header_style="bold")
    table.add_column("engine argument")
    table.add_column("value", justify="right")
    table.add_column("why")
    for name, value, reason in plan_rows(plan):
        table.add_row(name, value, reason)
    out.print(table)
    out.print(memory_line(plan))
    for problem in plan.problems:
        out.print(line(styled("problem:", "red"), " ", problem))
    for alt in plan.alternatives:
        out.print(line(styled("would fit:", "cyan"), " ", alt.summary) if alt.available else
                  line(styled("later:", "dim"), " ", alt.summary))
    for note in plan.notes:
        out.print(line(styled("note:", "yellow"), " ", note))
