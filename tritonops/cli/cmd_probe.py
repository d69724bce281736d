"""`tritonops probe`: read GPUs and host facts over SSH, on every host in parallel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.output import status_text
from tritonops.cli.selection import add_host_key_option, selected_hosts
from tritonops.exit_codes import exit_code_of
from tritonops.errors import InputError
from tritonops.facts.defaults import DEFAULT_ROOT
from tritonops.values.numbers import real_number

if TYPE_CHECKING:
    from rich.table import Table

    from tritonops.facts.model import ProbeReport
    from tritonops.results import HostResult
    from tritonops.transport.spec import ConnectionSpec

MAX_WAIT_S = 3600.0


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "probe", parents=[common], help=COMMANDS["probe"],
        description="Probe hosts (user@host[:port], or -i INVENTORY [--limit]) for GPUs, memory, "
                    "disk, Docker and the NVIDIA container toolkit.")
    parser.add_argument("hosts", nargs="*", metavar="HOST", help="user@host[:port]")
    parser.add_argument("--local", action="store_true", help="probe this machine (no SSH)")
    add_host_key_option(parser)
    parser.add_argument("--root", default=DEFAULT_ROOT, help=f"deployment root whose disk is measured ({DEFAULT_ROOT})")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds the probe may run per host")
    parser.set_defaults(run=run)


def target_specs(args) -> list[ConnectionSpec]:
    from tritonops.transport.spec import ConnectionSpec  # dataclasses: ~20 ms a usage error need not pay

    specs: list[ConnectionSpec] = []
    if args.local:
        specs.append(ConnectionSpec(name="localhost", host="localhost", local=True))
    if args.hosts:
        from tritonops.inventory import spec_from_target

        specs.extend(spec_from_target(target) for target in args.hosts)
    if args.inventory:
        specs.extend(host.connection for host in selected_hosts(args))
    elif args.limit:
        raise InputError("--limit needs an inventory (-i INVENTORY)", "--limit")
    if not specs:
        raise InputError("nothing to probe: give HOST..., -i INVENTORY or --local", "probe")
    return specs


def run(args, out) -> int:
    from tritonops.facts.probe import probe_hosts

    printing = ("tritonops.redact",) if args.json else ("tritonops.redact", "rich.table", "rich.console",
                                                        "tritonops.facts.summary")
    report = probe_hosts(target_specs(args), args.forks, accept_new_host_keys=args.accept_new_host_keys,
                         disk_path=args.root,
                         timeout=real_number(args.timeout, "--timeout (seconds)", "--timeout", maximum=MAX_WAIT_S),
                         preload=printing)  # loaded while the first host runs the probe
    if args.json:
        from tritonops.cli.result_json import document
        from tritonops.facts.model import SCHEMA_VERSION

        out.json(document("probe", probe_results(report), facts_schema=SCHEMA_VERSION))
    else:
        out.print(probe_table(report))
    return exit_code_of(host.status for host in report.hosts)


def probe_results(report: ProbeReport) -> list[HostResult]:
    """The report's hosts as the one result shape: each host's facts its payload."""
    from tritonops.api import probe_results

    return list(probe_results(report))


def probe_table(report: ProbeReport) -> Table:
    from rich.table import Table

    from tritonops.facts.summary import compute_capabilities, free_vram_summary, gpu_summary
    from tritonops.units import gib

    table = Table(title=None, show_lines=False)
    for column in ("host", "status", "GPUs", "CC", "free VRAM", "driver / CUDA", "RAM", "disk free",
                   "docker", "toolkit", "note"):
        table.add_column(column, overflow="fold")
    for host in report.hosts:
        status = status_text(host.status)
        facts = host.facts
        if facts is None:
            table.add_row(host.host, status, "", "", "", "", "", "", "", "", host.msg)
            continue
        nvidia, system, docker = facts.nvidia, facts.system, facts.docker
        driver = f"{nvidia.driver_version} / {nvidia.cuda_driver_version}" if nvidia.driver_version else "-"
        docker_text = docker.version or ("engine down" if docker.present else "absent")
        toolkit = "yes" if docker.nvidia_container_toolkit or docker.nvidia_runtime else "no"
        table.add_row(
            host.host, status, gpu_summary(nvidia), compute_capabilities(nvidia), free_vram_summary(nvidia),
            driver, f"{gib(system.ram_available_bytes, 0)}/{gib(system.ram_total_bytes, 0)}",
            gib(system.disk_free_bytes, 0), docker_text, toolkit, host.msg,
        )
    return table
