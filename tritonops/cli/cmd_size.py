"""`tritonops size`: choose vLLM engine settings for a model on some GPUs, and explain them."""

from __future__ import annotations

from rich.table import Table

from tritonops.cli.output import line, styled
from tritonops.errors import InputError
from tritonops.sizing.chooser import size_engine
from tritonops.sizing.engine_plan import EnginePlan, SizingRequest
from tritonops.sizing.explain import headline, memory_line, plan_rows
from tritonops.sizing.gpu_catalog import GPU_CATALOG
from tritonops.sizing.gpu_spec import MAX_GPUS_PER_HOST, gpu_spec_from_catalog, gpu_spec_from_numbers
from tritonops.sizing.model_catalog import catalog_ids
from tritonops.sizing.request_numbers import flag, request_number
from tritonops.sizing.versions import DEFAULT_VLLM_VERSION


def add_engine_options(parser) -> None:
    """The engine arguments `size` and `plan` share. Given ones are checked, not chosen."""
    g = parser.add_argument_group("engine arguments (left out: chosen, or vLLM's default for the version)")
    g.add_argument("--vllm-version", default=None, metavar="V",
                   help=f"vLLM version to size for (default {DEFAULT_VLLM_VERSION}, the pinned image's)")
    # numbers are read as text and checked by request_numbers (one message for every bad value)
    g.add_argument("--tensor-parallel-size", metavar="T")
    g.add_argument("--gpu-memory-utilization", metavar="U", help="in (0, 1]")
    g.add_argument("--max-model-len", metavar="L", help="check this length instead of choosing one")
    g.add_argument("--max-context", metavar="L", help="cap for the chosen max_model_len")
    g.add_argument("--max-num-seqs", metavar="N")
    g.add_argument("--max-num-batched-tokens", metavar="B")
    g.add_argument("--dtype", choices=("auto", "float16", "half", "bfloat16", "float32"))
    g.add_argument("--kv-cache-dtype", choices=("auto", "fp8", "fp8_e4m3", "fp8_e5m2"))
    g.add_argument("--enforce-eager", action="store_true", default=None)
    g.add_argument("--prefer", choices=("fewest-gpus", "latency"), default="fewest-gpus",
                   help="fewest-gpus: the smallest TP that holds the target context (default); "
                        "latency: the largest TP that fits")
    g.add_argument("--concurrency", default=1, metavar="N",
                   help="full-length requests the KV cache must hold at once (default 1)")


_NUMBER_FLAGS = ("tensor_parallel_size", "gpu_memory_utilization", "max_model_len", "max_context",
                 "max_num_seqs", "max_num_batched_tokens", "concurrency")


def request_from_args(args, model_ref: str) -> SizingRequest:
    numbers = {field: request_number(field, getattr(args, field), flag(field))
               for field in _NUMBER_FLAGS if getattr(args, field) is not None}
    return SizingRequest(
        model_ref=model_ref, vllm_version=args.vllm_version or DEFAULT_VLLM_VERSION, dtype=args.dtype,
        kv_cache_dtype=args.kv_cache_dtype, enforce_eager=args.enforce_eager, prefer=args.prefer, **numbers)


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "size", parents=[common], help="choose vLLM engine settings for a model and GPUs",
        description="Predict vLLM's KV cache for a model on some GPUs and choose tensor_parallel_size, "
                    "max_model_len, dtype, ... with a reason for each.")
    parser.add_argument("--model", metavar="DIR|HF_ID", help="model directory (config.json, safetensors) or "
                        "Hugging Face id (built-in catalog offline)")
    parser.add_argument("--gpu", metavar="NAME[:COUNT]", help=f"catalog key ({', '.join(GPU_CATALOG)}) or NVML name")
    parser.add_argument("--gpu-memory-gib", metavar="X", help="any other card: its CUDA total memory")
    parser.add_argument("--compute-capability", metavar="M.N", help="with --gpu-memory-gib")
    parser.add_argument("--gpus", default=1, metavar="N",
                        help=f"with --gpu-memory-gib (default 1, at most {MAX_GPUS_PER_HOST})")
    parser.add_argument("--list-models", action="store_true", help="list the built-in model catalog")
    parser.add_argument("--list-gpus", action="store_true", help="list the GPU catalog")
    add_engine_options(parser)
    parser.set_defaults(run=run)


def gpus_from_args(args):
    if args.gpu and args.gpu_memory_gib is not None:
        raise InputError("give --gpu or --gpu-memory-gib, not both", "--gpu")
    if args.gpu:
        return gpu_spec_from_catalog(args.gpu)
    if args.gpu_memory_gib is not None:
        if not args.compute_capability:
            raise InputError("--gpu-memory-gib needs --compute-capability M.N", "--compute-capability")
        return gpu_spec_from_numbers(args.gpu_memory_gib, args.compute_capability, args.gpus)
    raise InputError("which GPUs? give --gpu NAME[:COUNT] or --gpu-memory-gib X --compute-capability M.N", "--gpu")


def run(args, out) -> int:
    if args.list_models or args.list_gpus:
        return _list(args, out)
    if not args.model:
        raise InputError("which model? give --model DIR or a Hugging Face id", "--model")
    from tritonops.sizing.model_source import load_model_spec

    gpus = gpus_from_args(args)
    model = load_model_spec(args.model)
    plan = size_engine(model, gpus, request_from_args(args, args.model))
    if args.json:
        out.json(plan.to_dict())
    else:
        print_plan(out, plan)
    return 0 if plan.fits else 1


def print_plan(out, plan: EnginePlan, title: str | None = None) -> None:
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


def _list(args, out) -> int:
    if args.list_gpus:
        rows = [{"key": g.key, "nvml_names": list(g.nvml_names), "memory_total_bytes": g.memory_total_bytes,
                 "cuda_total_bytes": g.cuda_total_bytes, "compute_capability": "%d.%d" % g.compute_capability,
                 "source": g.source} for g in GPU_CATALOG.values()]
        if args.json:
            out.json(rows)
        else:
            table = Table("key", "NVML name", "NVML total", "CUDA total", "CC", "source")
            for r in rows:
                table.add_row(r["key"], r["nvml_names"][0], f"{r['memory_total_bytes'] / 2**30:.2f} GiB",
                              f"{r['cuda_total_bytes'] / 2**30:.2f} GiB", r["compute_capability"], r["source"])
            out.print(table)
    if args.list_models:
        if args.json:
            out.json(catalog_ids())
        else:
            for model_id in catalog_ids():
                out.print(model_id)
    return 0
