"""`tritonops plan`: the engine plan per inventory host, and the files it would write.

Parsing and printing only: the flow (facts -> model entries -> sizing -> model repository) is
`tritonops.planning`, which `deploy` runs too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.engine_options import add_engine_options, print_plan, request_from_args
from tritonops.cli.output import line, styled
from tritonops.cli.selection import add_extra_vars_option, add_host_key_option
from tritonops.errors import InputError
from tritonops.exit_codes import exit_code_of
from tritonops.values.files import read_regular_text
from tritonops.values.names import safe_name

if TYPE_CHECKING:
    from tritonops.facts.model import ProbeReport
    from tritonops.planning import HostDeployPlan

REPORT_MAX_BYTES = 64 * 2**20   # a probe report is some kilobytes per host


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "plan", parents=[common], help=COMMANDS["plan"],
        description="Probe the inventory's hosts (or read a saved probe report) and size the model for "
                    "each host's GPUs; show model.json and config.pbtxt as they would be written. "
                    "Per-host variables: tritonops_model or tritonops_models (several models and versions), "
                    "tritonops_vllm_version, tritonops_gpu_memory_utilization, tritonops_max_model_len, "
                    "tritonops_tensor_parallel_size, tritonops_max_num_seqs, tritonops_swap_space_gib, "
                    "tritonops_engine_args (docs/sizing.md).")
    parser.add_argument("--model", metavar="DIR|HF_ID", help="model for hosts without tritonops_model")
    parser.add_argument("--model-name", default="vllm_model",
                        help="Triton model name, a directory in the model repository (default vllm_model; "
                             "letters, digits, '.', '_', '-')")
    parser.add_argument("--facts", type=Path, metavar="FILE",
                        help="a saved `tritonops probe --json` report instead of probing")
    parser.add_argument("--no-metrics", action="store_true", help="leave REPORT_CUSTOM_METRICS out")
    parser.add_argument("--files", action="store_true",
                        help="show each file the deploy would write (model.json, config.pbtxt); a file the same as "
                             "an earlier host's is named, not shown again (by default: their names)")
    add_extra_vars_option(parser, "extra variables, as deploy takes them (highest precedence; repeatable)")
    add_host_key_option(parser)
    add_engine_options(parser)
    parser.set_defaults(run=run)


def _read_report(path: Path) -> ProbeReport:
    from tritonops.facts.model import report_from_json

    text = read_regular_text(path, max_bytes=REPORT_MAX_BYTES, what="probe report")   # never a FIFO's wait
    try:
        return report_from_json(json.loads(text))
    except (ValueError, RecursionError) as err:
        raise InputError(f"not a probe report: {str(err).splitlines()[0]}", str(path)) from None


def run(args, out) -> int:
    from tritonops import api
    from tritonops.cli.selection import connection_defaults, inventory_paths, inventory_reading
    from tritonops.playbook import parse_extra_vars

    if not args.inventory:
        raise InputError("plan needs an inventory (-i INVENTORY)", "-i")
    safe_name(args.model_name, "model name", "--model-name")
    results = api.plan(inventory=inventory_paths(args.inventory), limit=args.limit,
                       extra_vars=parse_extra_vars(args.extra_vars), model=args.model, model_name=args.model_name,
                       request=request_from_args(args, args.model or ""), metrics=not args.no_metrics,
                       facts=_read_report(args.facts) if args.facts else None, forks=args.forks,
                       accept_new_host_keys=args.accept_new_host_keys, defaults=connection_defaults(args),
                       ansible=inventory_reading(args))
    if args.json:
        from tritonops.cli.result_json import document

        out.json(document("plan", results, payload=lambda result: _host_json(result.payload)))
    else:
        shown: dict[tuple[str, str], str] = {}  # (path, text) -> the first host it was shown for
        for result in results:
            _print_host(out, result.payload, shown if args.files else None)
    return exit_code_of(result.status for result in results)


def _host_json(hp: HostDeployPlan) -> dict:
    """A host's row payload: (the single-model form, kept for scripts) its first model's reference,
    plan and files relative to that model's folder; `models` and `repository` hold every model."""
    first = hp.models[0] if hp.models else None
    prefix = f"{first.name}/" if first else ""
    own = {path[len(prefix):]: text for path, text in hp.files.items() if first and path.startswith(prefix)}
    errors = hp.errors
    return {"model": first.model if first else "", "ok": hp.ok, "error": "; ".join(errors) if errors else None,
            "plan": first.plan.to_dict() if first and first.plan else None, "files": own,
            "models": [{"name": m.name, "version": m.version, "model": m.model, "ok": m.ok, "error": m.error,
                        "plan": m.plan.to_dict() if m.plan else None} for m in hp.models],
            "repository": dict(hp.files), "notes": list(hp.notes), "bind": hp.bind,
            "replicas": [{"index": r.index, "gpus": list(r.gpus), "link": r.link, "ports": list(r.ports.all())}
                         for r in hp.placement.replicas] if hp.placement else None,
            "cluster": hp.cluster.to_release() if hp.cluster else None}


def cluster_line(cluster, host: str) -> str:
    """`cluster big (Ray, pipeline_parallel_size 2): this host is the head, stage 1 of 2 ...`"""
    me = cluster.member(host)
    role = "the head" if me.stage == 0 else "a worker"
    stages = ", ".join(f"{m.host} {m.address} layers {m.first_layer}-{m.first_layer + m.layers - 1}"
                       for m in cluster.members)
    return (f"{cluster.name} (Ray, pipeline_parallel_size {cluster.pipeline_parallel_size}, tensor_parallel_size "
            f"{cluster.tensor_parallel_size} on each): this host is {role}, stage {me.stage + 1}; {stages}")


def _print_host(out, hp: HostDeployPlan, shown: dict[tuple[str, str], str] | None = None) -> None:
    """A host's plan; its files whole when `shown` is given (those shown for an earlier host only named), else
    their names."""
    from tritonops.planning.gpu_choice import describe

    out.print(styled(f"\n== {hp.host}", "bold"))
    if hp.error:
        out.print(line(styled("error:", "red"), " ", hp.error))
    several = len(hp.models) > 1
    for m in hp.models:
        if m.plan is not None:
            print_plan(out, m.plan)
        if m.error:
            out.print(line(styled("error:", "red"), " ", f"{m.name} version {m.version}: " if several else "",
                           m.error))
    if hp.cluster is not None:
        out.print(line(styled("cluster:", "bold"), " ", cluster_line(hp.cluster, hp.host)))
    for replica in hp.placement.replicas if hp.placement else ():
        out.print(line(styled("serves on:", "bold"), " ", describe(replica)))
    if hp.placement and hp.bind != "0.0.0.0":  # a private address behind a balancer, or the user's own
        out.print(line(styled("binds to:", "bold"), " ", hp.bind))
    if hp.placement and hp.placement.idle:
        out.print(line(styled("idle:", "bold"), " ", f"GPU {','.join(map(str, hp.placement.idle))}"))
    for note in hp.notes:
        out.print(line(styled("note:", "yellow"), " ", note))
    if shown is None:
        if hp.files:
            out.print(line(styled("files:", "bold"), " ", ", ".join(hp.files), styled(" (--files shows them)", "dim")))
        return
    for path, text in hp.files.items():
        if (path, text) in shown:
            out.print(styled(f"--- {path}: the same as {shown[(path, text)]}'s", "dim"))
            continue
        shown[(path, text)] = hp.host
        out.print(styled(f"--- {path}", "dim"))
        out.print(styled(text.rstrip("\n")))
