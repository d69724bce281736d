"""`tritonops deploy`: run playbooks/deploy.yml over the inventory (see tritonops.deploy.flow).

Prints each host's progress as it happens (stderr), then per host the plan and, with --diff, every
file it writes or would write, then the recap. --json prints one document instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.engine_options import add_engine_options, request_from_args
from tritonops.cli.output import STATUS_STYLE, line, status_text, styled
from tritonops.cli.selection import (add_extra_vars_option, add_host_key_option, become_vars, connection_defaults,
                                     inventory_paths, inventory_reading)
from tritonops.errors import InputError
from tritonops.exit_codes import exit_code_of
from tritonops.values.names import safe_name

if TYPE_CHECKING:
    from rich.table import Table


def default_playbook(name: str) -> str:
    """./playbooks/NAME.yml of a project of one's own, else the one shipped in the package."""
    from tritonops.playbook.shipped import playbook_path

    return str(playbook_path(name))


def default_roles_path(playbook: str) -> tuple[str, ...]:
    """roles/ beside the playbook's folder, then the package's roles (Ansible looks next to the playbook)."""
    from tritonops.playbook.shipped import roles_path

    return roles_path(playbook)


def add_playbook_options(parser, playbook: str) -> None:
    parser.add_argument("--playbook", default=None, metavar="PATH", help=f"the playbook (default playbooks/{playbook})")
    add_play_options(parser)
    add_no_drain_option(parser)
    parser.add_argument("--break-lock", action="store_true",
                        help="take over a host's deployment lock held by another run (only when that run is gone)")
    add_audit_log_option(parser, "this run's events")
    add_host_key_option(parser)
    from tritonops.cli.playbook_listing import add_listing_options

    add_listing_options(parser)


def add_no_drain_option(parser) -> None:
    parser.add_argument("--no-drain", action="store_true",
                        help="restart replicas without draining them on the balancers (a balancer that cannot be "
                             "reached otherwise keeps the replicas it fronts from restarting)")


def add_play_options(parser) -> None:
    """What ansible-playbook takes of a run: more roles, -e, --check, --diff, --tags, --skip-tags."""
    parser.add_argument("--roles-path", action="append", default=[], metavar="DIR",
                        help="more folders to look for roles in (after roles/ beside the playbook)")
    add_extra_vars_option(parser)
    parser.add_argument("--check", "-C", action="store_true", help="change nothing: show what would be done")
    parser.add_argument("--diff", "-D", action="store_true", help="show every file written (or that would be)")
    parser.add_argument("--tags", "-t", action="append", default=[], metavar="TAGS", help="only tasks with these tags")
    parser.add_argument("--skip-tags", action="append", default=[], metavar="TAGS", help="not tasks with these tags")
    parser.add_argument("--start-at-task", metavar="NAME",
                        help="start the playbook at the first task with this name (a glob; 'role : name' too)")
    parser.add_argument("--step", action="store_true",
                        help="ask before each task: (y)es, (n)o to skip it, (c)ontinue without asking")


def step_options(args, ask=None) -> dict:
    """DeployOptions' start_at_task and step of --start-at-task and --step; `ask`: how a question is put and its
    answer read (default: on stderr and stdin, so --json output stays clean)."""
    if not getattr(args, "step", False):
        return {"start_at_task": getattr(args, "start_at_task", None)}
    ask = ask or _ask_on_terminal

    def confirm(task: str) -> str:
        while True:  # as ansible-playbook asks; an empty answer is its default, no
            answer = ask(f"Perform task: {task} (N)o/(y)es/(c)ontinue: ").strip().lower()
            if answer in ("", "n", "no", "y", "yes", "c", "continue"):
                return (answer or "n")[0]

    return {"start_at_task": getattr(args, "start_at_task", None), "step": confirm}


def _ask_on_terminal(question: str) -> str:
    import sys

    sys.stderr.write(question)
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer:
        raise InputError("--step needs answers on stdin and it is closed", "--step")
    return answer


def add_reading_options(parser) -> None:
    """The options of a command that reads what a deploy made (status, metrics, logs)."""
    add_extra_vars_option(parser, "the extra variables the deploy had (e.g. tritonops_deployment, ports); repeatable")
    add_host_key_option(parser)


def run_inputs(args, playbook: str, more_vars: dict | None = None):
    """The run's inputs, read once: `playbook` with its roles (beside it, then --roles-path, then the
    shipped ones), the -i inventory, --limit and -e (then `more_vars`)."""
    from tritonops.api import run_inputs as api_run_inputs
    from tritonops.playbook import parse_extra_vars

    return api_run_inputs("", playbook=playbook, roles_path=tuple(getattr(args, "roles_path", ())),
                          inventory=inventory_paths(args.inventory), limit=args.limit,
                          extra_vars={**parse_extra_vars(args.extra_vars), **(more_vars or {}), **become_vars(args)},
                          ansible=inventory_reading(args), defaults=connection_defaults(args))


def reading_inputs(args):
    """(inputs, options) of a command that reads what a deploy made: the deploy playbook's role
    defaults under the inventory (ports, the deployment's name), --limit, -e; --forks and the host-key option."""
    from tritonops.reading.sessions import ReadOptions

    return (run_inputs(args, default_playbook("deploy.yml")),
            ReadOptions(forks=args.forks, accept_new_host_keys=args.accept_new_host_keys))


def show_host_results(out, args, results, command: str, table) -> int:
    """A reading command's results: --json (the one result document, each row's payload the host's
    data) or `table(results)`; the exit code of the hosts' statuses (tritonops/exit_codes.py)."""
    if args.json:
        from tritonops.cli.result_json import document

        out.json(document(command, results))
    else:
        out.print(table(results))
    return exit_code_of(r.status for r in results)


def add_audit_log_option(parser, what: str) -> None:
    """--audit-log, read back by audit_log_of: where `what` (JSON lines) is appended."""
    parser.add_argument("--audit-log", metavar="PATH", default=None,
                        help=f"append {what} here (JSON lines; default $TRITONOPS_AUDIT_LOG, else "
                             "~/.local/state/tritonops/audit.log; 'none': not written)")


def audit_log_of(args):
    """The audit log path from --audit-log (None: not written)."""
    from tritonops.deploy.event_log import default_audit_log
    if args.audit_log == "none":
        return None
    return Path(args.audit_log) if args.audit_log else default_audit_log()


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "deploy", parents=[common], help=COMMANDS["deploy"],
        description="Probe, size, lock, bring the vllm_env image, then run the deploy playbook: model weights "
                    "(verified), the rendered model repository and a release per host. --check --diff shows "
                    "everything it would write and changes nothing.")
    add_playbook_options(parser, "deploy.yml")
    parser.add_argument("--model", metavar="DIR|HF_ID", help="model for hosts without tritonops_model(s)")
    parser.add_argument("--model-name", default="vllm_model", help="Triton model name (default vllm_model)")
    parser.add_argument("--no-metrics", action="store_true", help="leave REPORT_CUSTOM_METRICS out")
    parser.add_argument("--bench-gate", action="store_true",
                        help="bench the first batch that switched (aiperf, tritonops_bench_gate_* thresholds) against "
                             "the previous release's recorded run; slower: that batch goes back and the rollout stops")
    add_engine_options(parser)
    parser.set_defaults(run=run)


def _tags(given: list[str]) -> tuple[str, ...]:
    return tuple(tag.strip() for text in given for tag in text.split(",") if tag.strip())


def run(args, out) -> int:
    from tritonops.deploy.flow import deploy
    from tritonops.deploy.run import DeployOptions

    safe_name(args.model_name, "model name", "--model-name")
    inputs = run_inputs(args, args.playbook or default_playbook("deploy.yml"))
    from tritonops.cli.playbook_listing import show_listing, wants_listing

    if wants_listing(args):
        return show_listing(out, args, inputs, _tags(args.tags) or ("all",), _tags(args.skip_tags))
    options = DeployOptions(
        tags=_tags(args.tags) or ("all",),
        skip_tags=_tags(args.skip_tags), check=args.check, diff=args.diff, forks=args.forks,
        accept_new_host_keys=args.accept_new_host_keys, break_lock=args.break_lock,
        request=request_from_args(args, args.model or ""), default_model=args.model, model_name=args.model_name,
        metrics=not args.no_metrics, audit_log=audit_log_of(args), no_drain=args.no_drain, **step_options(args))
    gate = None
    if args.bench_gate and not args.check:
        from tritonops.deploy.bench_gate import plan_bench_gate

        gate = plan_bench_gate(inputs, run_inputs(args, default_playbook("rollback.yml")))
    progress = None if args.json else _Progress(out)
    try:
        report = deploy(inputs, options, on_event=progress, gate=gate)
    finally:
        if progress is not None:
            progress.close()
    if args.json:
        out.json(_report_json(report))
    else:
        _print_report(out, report, args)
    return report.exit_code


class _Progress:
    """A subscriber of the run's event stream: each host's phase and task as it finishes, on stderr
    (so --json and pipes stay clean)."""

    def __init__(self, out):
        self.out = out
        self.display = None  # a live display of the bytes of long steps (weights), started by the first

    def close(self) -> None:
        if self.display is not None:
            self.display.__exit__(None, None, None)
            self.display = None

    def __call__(self, event) -> None:
        from tritonops.playbook.events import HostDone, PhaseDone, PlayStarted, TaskStarted
        from tritonops.results import Progress

        if isinstance(event, Progress):
            if self.display is None and self.out.err_console.is_terminal:
                from tritonops.cli.progress_display import TransferDisplay

                self.display = TransferDisplay(self.out.err_console).__enter__()
            if self.display is not None:
                self.display(event)
        elif isinstance(event, PhaseDone):
            self._line(event.result.task, event.result)
        elif isinstance(event, PlayStarted):
            mode = " (check: nothing changes)" if event.check else ""
            self.out.info(line(styled(f"PLAY {event.play}{mode}", "bold")))
        elif isinstance(event, TaskStarted):
            self.out.info(line(styled(f"TASK {event.task}", "bold")))
        elif isinstance(event, HostDone):
            self._line("", event.result)
            self._steps(event.result)

    def _steps(self, result) -> None:
        """-v: each step the task carried out (its command) and its time, in --check each step it would carry out;
        -vv: what each printed too, a line per line (a JSON answer, a line per field)."""
        from tritonops.playbook.host_task import TaskOutcome

        if self.out.verbosity < 1 or not isinstance(result.payload, TaskOutcome):
            return
        if result.payload.check:
            for step in result.payload.steps:
                self.out.info(line(styled("    would ", "dim"), step))
        for detail in result.payload.details:  # what a step starts, whole (a replica's docker run)
            self.out.info(line(styled("    runs ", "dim"), detail))
        for run in result.payload.runs:
            self.out.info(line(styled(f"    {run.seconds:6.2f}s ", "dim"), run.said))
            if self.out.verbosity >= 2 and run.output:
                for text in output_lines(run.output):
                    self.out.info(line(styled(f"           | {text}", "dim")))

    def _line(self, phase: str, result) -> None:
        prefix = f"{phase:<6} " if phase else "  "
        self.out.info(line(prefix, styled(f"{result.host}", "bold"), " ", status_text(result.status),
                           f" {result.elapsed_s:.1f}s ", result.msg))


def output_lines(output: str, width: int = 200) -> list[str]:
    """What a step printed, for -vv: its lines; a JSON document (a host program's answer) a line per field, nested
    fields indented; each line cut at `width` characters."""
    import json

    text = output.strip()
    if text.startswith("{"):
        try:
            text = json.dumps(json.loads(text), indent=2)
        except ValueError:
            pass
    return [row if len(row) <= width else row[:width - 1] + "…" for row in text.splitlines()]


def _print_report(out, report, args, title: str = "DEPLOY RECAP") -> None:
    results = report.run.results if report.run else ()
    # each planned host (a deploy), then each other host with a --diff to show (a rollback plans nothing)
    for host in dict.fromkeys([*report.plans, *(result.host for result in results)]):
        plan = report.plans.get(host)
        diffs = [result for result in results if result.host == host and result.diff] if args.diff else []
        if (plan is not None and not plan.ok) or (plan is None and not diffs):
            continue
        out.print(styled(f"\n== {host}", "bold"))
        for model in plan.models if plan is not None else ():
            engine = model.plan
            out.print(f"{model.name} v{model.version}: {model.model} on {engine.gpu_count} x {engine.gpu_name}: "
                      f"TP {engine.tensor_parallel_size}, max_model_len {engine.max_model_len}, {engine.dtype}, "
                      f"KV cache {engine.kv_cache_tokens:,} tokens, vLLM {engine.vllm_version}")
        for result in diffs:
            out.print(styled(f"--- {result.task}", "dim"))
            out.print(styled(result.diff.rstrip("\n")))
    if report.run and report.run.stopped_reason:
        out.print(line(styled("stopped: ", "red"), report.run.stopped_reason))
    out.print(recap_table(report.recap, f"{title} (check: nothing was changed)" if report.check else title))


def recap_table(recap, title: str) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("host")
    for status in STATUS_STYLE:
        table.add_column(status, justify="right")
    for host, counts in recap.rows():
        table.add_row(host, *(styled(str(counts[status]), STATUS_STYLE[status] if counts[status] else "")
                              for status in STATUS_STYLE))
    return table


def _report_json(report, command: str = "deploy") -> dict:
    from tritonops.cli.result_json import document
    from tritonops.results import json_data
    from tritonops.playbook.host_task import TaskOutcome
    from tritonops.weights.relay import WeightsArrival

    def payload(result):  # a task's outcome (its steps' commands and times; what they printed is -vv's)
        if isinstance(result.payload, WeightsArrival):  # the weights phase: where the host's weights came from
            return json_data(result.payload)
        if not isinstance(result.payload, TaskOutcome):
            return None  # the facts and plan phases: in "plans" below
        data = json_data(result.payload)
        data["runs"] = [{"said": run["said"], "seconds": round(run["seconds"], 3)} for run in data["runs"]]
        return data

    return document(command, report.results, payload=payload, exit_code=report.exit_code, **{
        "check": report.check,
        "ok": report.ok,
        "plans": {host: {"ok": plan.ok, "errors": plan.errors,
                         "models": [{"name": m.name, "version": m.version, "model": m.model,
                                     "engine": m.plan.to_dict() if m.plan else None} for m in plan.models]}
                  for host, plan in report.plans.items()},
        "files": {host: facts["tritonops_deploy"]["files"] for host, facts in report.host_facts.items()},
        "stopped": report.run.stopped_reason if report.run else None,
        "image_bytes_sent": report.image_bytes,
        "weights_bytes_sent": report.weights_bytes,
        "bench_gate": json_data(report.bench_gate),
    })
