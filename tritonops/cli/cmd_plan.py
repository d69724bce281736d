"""`tritonops plan`: the engine plan per inventory host, and the files it would write."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from tritonops.cli.cmd_size import add_engine_options, print_plan, request_from_args
from tritonops.cli.output import line, styled
from tritonops.cli.selection import add_host_key_option, selected_hosts
from tritonops.errors import InputError, TritonopsError
from tritonops.facts.model import HostFacts, ProbeReport
from tritonops.render import render_config_pbtxt, render_model_json
from tritonops.sizing.fleet import HOST_VARS, HostPlan, model_ref_for, plan_for_hosts
from tritonops.values.files import read_regular_text
from tritonops.values.names import safe_name

REPORT_MAX_BYTES = 64 * 2**20   # a probe report is some kilobytes per host


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "plan", parents=[common], help="the engine plan per inventory host",
        description="Probe the inventory's hosts (or read a saved probe report) and size the model for "
                    "each host's GPUs; show model.json and config.pbtxt as they would be written. "
                    "Per-host overrides: tritonops_model, tritonops_vllm_version, "
                    "tritonops_gpu_memory_utilization, tritonops_max_model_len, "
                    "tritonops_tensor_parallel_size, tritonops_max_num_seqs.")
    parser.add_argument("--model", metavar="DIR|HF_ID", help="model for hosts without tritonops_model")
    parser.add_argument("--model-name", default="vllm_model",
                        help="Triton model name, a directory in the model repository (default vllm_model; "
                             "letters, digits, '.', '_', '-')")
    parser.add_argument("--facts", type=Path, metavar="FILE",
                        help="a saved `tritonops probe --json` report instead of probing")
    parser.add_argument("--no-metrics", action="store_true", help="leave REPORT_CUSTOM_METRICS out")
    add_host_key_option(parser)
    add_engine_options(parser)
    parser.set_defaults(run=run)


def _read_report(path: Path) -> ProbeReport:
    text = read_regular_text(path, max_bytes=REPORT_MAX_BYTES, what="probe report")   # never a FIFO's wait
    try:
        return ProbeReport.model_validate(json.loads(text))
    except (ValueError, RecursionError) as err:
        raise InputError(f"not a probe report: {str(err).splitlines()[0]}", str(path)) from None


def collect_facts(args, hosts) -> tuple[dict[str, HostFacts | None], dict[str, str]]:
    """Thin I/O: probe the hosts (or read --facts). Facts by inventory name, and why a
    host has none."""
    if args.facts:
        report = _read_report(args.facts)
    else:
        from tritonops.facts.probe import probe_hosts

        report = probe_hosts([h.connection for h in hosts], args.forks,
                             accept_new_host_keys=args.accept_new_host_keys)
    by_name = {probe.host: probe for probe in report.hosts}
    facts = {h.name: by_name[h.name].facts if h.name in by_name else None for h in hosts}
    why = {h.name: (f"{by_name[h.name].status}: {by_name[h.name].msg}" if h.name in by_name
                    else "not in the probe report") for h in hosts}
    return facts, why


def load_models(refs: set[str]) -> tuple[dict, dict[str, str]]:
    from tritonops.sizing.model_source import load_model_spec

    models, errors = {}, {}
    for ref in sorted(refs):
        try:
            models[ref] = load_model_spec(ref)
        except TritonopsError as err:
            errors[ref] = str(err)
    return models, errors


def run(args, out) -> int:
    if not args.inventory:
        raise InputError("plan needs an inventory (-i INVENTORY)", "-i")
    safe_name(args.model_name, "model name", "--model-name")
    base = request_from_args(args, args.model or "")
    hosts = selected_hosts(args)
    host_vars = {h.name: dict(h.vars) for h in hosts}
    var_where = {h.name: {var: h.setting(var).where for var in HOST_VARS if var in h.history} for h in hosts}
    refs = {model_ref_for(args.model, v) for v in host_vars.values()} - {None}
    models, model_errors = load_models(refs)
    facts, why = collect_facts(args, hosts)
    plans = plan_for_hosts(facts, host_vars, models, base, args.model, model_errors, var_where)
    plans = [replace(p, error=why[p.host]) if p.plan is None and facts.get(p.host) is None and p.model
             else p for p in plans]
    if args.json:
        out.json([_host_json(p, args) for p in plans])
    else:
        for hp in plans:
            _print_host(out, hp, args)
    return 0 if all(p.ok for p in plans) else 1


def _files(hp: HostPlan, args) -> dict[str, str]:
    if hp.plan is None or not hp.plan.fits:
        return {}
    return {"config.pbtxt": render_config_pbtxt(args.model_name, metrics=not args.no_metrics),
            "1/model.json": render_model_json(hp.plan)}


def _host_json(hp: HostPlan, args) -> dict:
    return {"host": hp.host, "model": hp.model, "ok": hp.ok, "error": hp.error,
            "plan": hp.plan.to_dict() if hp.plan else None, "files": _files(hp, args)}


def _print_host(out, hp: HostPlan, args) -> None:
    out.print(styled(f"\n== {hp.host}", "bold"))
    if hp.plan is None:
        out.print(line(styled("error:", "red"), " ", hp.error))
        return
    print_plan(out, hp.plan)
    for name, text in _files(hp, args).items():
        out.print(styled(f"--- {args.model_name}/{name}", "dim"))
        out.print(styled(text.rstrip("\n")))
