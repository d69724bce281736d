"""`tritonops size`: choose vLLM engine settings for a model on some GPUs, and explain them."""

from __future__ import annotations

from tritonops.cli.commands import COMMANDS
from tritonops.cli.engine_options import add_engine_options, print_plan, request_from_args
from tritonops.errors import InputError
from tritonops.exit_codes import ExitCode
from tritonops.sizing.gpu_catalog import GPU_CATALOG
from tritonops.sizing.gpu_spec import MAX_GPUS_PER_HOST, gpu_spec_from_catalog, gpu_spec_from_numbers


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "size", parents=[common], help=COMMANDS["size"],
        description="Predict vLLM's KV cache for a model on some GPUs and choose tensor_parallel_size, "
                    "max_model_len, dtype, ... with a reason for each.")
    parser.add_argument("--model", metavar="DIR|HF_ID", help="model directory (config.json, safetensors) or "
                        "Hugging Face id (built-in catalog offline)")
    parser.add_argument("--gpu", metavar="NAME[:COUNT]", help=f"catalog key ({', '.join(GPU_CATALOG)}) or NVML name")
    parser.add_argument("--gpu-memory-gib", metavar="X", help="any other card: its CUDA total memory")
    parser.add_argument("--compute-capability", metavar="M.N", help="with --gpu-memory-gib")
    parser.add_argument("--gpus", default=None, metavar="N",
                        help=f"how many of those GPUs one host has (default 1, at most {MAX_GPUS_PER_HOST}; "
                             "--gpu NAME:COUNT says the same)")
    parser.add_argument("--nodes", dest="pipeline_parallel_size", metavar="N", help="hosts of that kind, one pipeline stage each on a Ray cluster "
                        "(pipeline_parallel_size N; default 1: one host)")
    parser.add_argument("--list-models", action="store_true", help="list the built-in model catalog")
    parser.add_argument("--list-gpus", action="store_true", help="list the GPU catalog")
    add_engine_options(parser)
    parser.set_defaults(run=run)


def gpus_from_args(args):
    if args.gpu and args.gpu_memory_gib is not None:
        raise InputError("give --gpu or --gpu-memory-gib, not both", "--gpu")
    if args.gpu:
        return gpu_spec_from_catalog(args.gpu, args.gpus)
    if args.gpu_memory_gib is not None:
        if not args.compute_capability:
            raise InputError("--gpu-memory-gib needs --compute-capability M.N", "--compute-capability")
        return gpu_spec_from_numbers(args.gpu_memory_gib, args.compute_capability,
                                     1 if args.gpus is None else args.gpus)
    raise InputError("which GPUs? give --gpu NAME[:COUNT] or --gpu-memory-gib X --compute-capability M.N", "--gpu")


def run(args, out) -> int:
    if args.list_models or args.list_gpus:
        return _list(args, out)
    if not args.model:
        raise InputError("which model? give --model DIR or a Hugging Face id", "--model")
    from tritonops.sizing.chooser import size_engine
    from tritonops.sizing.model_source import load_model_spec

    gpus = gpus_from_args(args)
    model = load_model_spec(args.model)
    plan = size_engine(model, gpus, request_from_args(args, args.model))
    if args.json:
        out.json(plan.to_dict())
    else:
        print_plan(out, plan)
    return ExitCode.OK if plan.fits else ExitCode.HOST_FAILED  # the model does not fit those GPUs


def _list(args, out) -> int:
    from tritonops.sizing.model_catalog import catalog_ids

    if args.list_gpus:
        rows = [{"key": g.key, "nvml_names": list(g.nvml_names), "memory_total_bytes": g.memory_total_bytes,
                 "cuda_total_bytes": g.cuda_total_bytes, "compute_capability": "%d.%d" % g.compute_capability,
                 "source": g.source} for g in GPU_CATALOG.values()]
        if args.json:
            out.json(rows)
        else:
            from rich.table import Table

            from tritonops.units import gib

            table = Table("key", "NVML name", "NVML total", "CUDA total", "CC", "source")
            for r in rows:
                table.add_row(r["key"], r["nvml_names"][0], gib(r["memory_total_bytes"]), gib(r["cuda_total_bytes"]),
                              r["compute_capability"], r["source"])
            out.print(table)
    if args.list_models:
        if args.json:
            out.json(catalog_ids())
        else:
            for model_id in catalog_ids():
                out.print(model_id)
    return 0
