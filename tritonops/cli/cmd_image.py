"""`tritonops image build|status`: the Triton + vLLM image on every host, built once, sent once."""

from __future__ import annotations

from tritonops.cli.commands import COMMANDS
from tritonops.cli.output import status_text
from tritonops.cli.selection import (add_host_key_option, become_vars, connection_defaults, inventory_paths,
                                      inventory_reading, selected_hosts)
from tritonops.exit_codes import ExitCode, exit_code_of
from tritonops.errors import InputError
from tritonops.image.ids import short_image_id


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "image", help=COMMANDS["image"],
        description="Build the committed tritonserver:vllm_env image once and stream it to every host "
                    "that lacks its exact ID (or pull the official vllm-python image), and show which "
                    "host has which image.")
    actions = parser.add_subparsers(dest="image_action", metavar="ACTION")
    build = actions.add_parser("build", parents=[common], help="build once, distribute to hosts lacking it")
    build.add_argument("--build-host", metavar="HOST", help="inventory host that builds (default: "
                       "tritonops_build_host, else the first host holding the base image)")
    build.add_argument("--parallel-build", action="store_true",
                       help="build on every host instead of building once and distributing")
    add_host_key_option(build)
    build.set_defaults(run=run_build)
    status = actions.add_parser("status", parents=[common], help="which host has which image, by ID and labels")
    add_host_key_option(status)
    status.set_defaults(run=run_status)
    parser.set_defaults(run=lambda args, out: (parser.print_help(), ExitCode.BAD_INPUT)[1])



def run_build(args, out) -> int:
    from tritonops.image.api import build_images

    from tritonops.image.settings import outside_build_hosts
    from tritonops.inventory import load_inventory
    from tritonops.planning.door import serving_hosts

    inventory = load_inventory(inventory_paths(args.inventory), extra_vars=become_vars(args),
                               defaults=connection_defaults(args), ansible=inventory_reading(args))
    hosts = serving_hosts(inventory.select(args.limit))
    if not hosts:
        raise InputError(f"no host matches {args.limit!r}", "--limit")
    # a build host outside --limit builds or sends only for hosts lacking the image; it gets nothing itself
    builders = {} if args.parallel_build else outside_build_hosts(hosts, inventory, args.build_host)
    from tritonops.cli.progress_display import live_progress

    with live_progress(out, not args.json) as display:  # each host's build and stream while it runs
        report = build_images(hosts, forks=args.forks, build_host=args.build_host,
                              parallel_build=args.parallel_build, accept_new_host_keys=args.accept_new_host_keys,
                              builders=builders, on_progress=display)
    if args.json:
        from tritonops.cli.result_json import document

        out.json(document("image build", report.results, images=report.images,
                          bytes_out_of_controller=report.bytes_out, bytes_by_host=report.bytes_by_host,
                          bytes_host_to_host=report.relayed_by_host))
    else:
        from rich.table import Table

        table = Table()
        for column in ("host", "status", "action", "image ID", "bytes received", "from", "message"):
            table.add_column(column, overflow="fold")
        for r in report.results:
            data = r.payload or {}
            table.add_row(r.host, _status(r.status), data.get("action", ""), short_image_id(data.get("image_id")),
                          str(data.get("bytes_received", "")), _from(data), r.msg)
        out.print(table)
        for image in report.images:
            if image.get("content_tag"):
                out.info(f"{image['content_tag']} = {short_image_id(image.get('image_id'))}"
                         + (f", built on {image['built_on']}" if image.get("built_on") else ", not rebuilt"))
        out.info(f"bytes out of the controller: {report.bytes_out}"
                 + (f"; passed host to host: {sum(report.relayed_by_host.values())}" if report.relayed_by_host else ""))
        from tritonops.results import Recap

        totals = Recap.of(report.results).totals()
        out.info("recap: " + " ".join(f"{status}={count}" for status, count in sorted(totals.items())))
    return exit_code_of(r.status for r in report.results)


def run_status(args, out) -> int:
    from tritonops.image.api import image_status

    group = image_status(selected_hosts(args), forks=args.forks, accept_new_host_keys=args.accept_new_host_keys)
    if args.json:
        from tritonops.cli.result_json import document

        out.json(document("image status", group))
    else:
        from rich.table import Table

        table = Table()
        for column in ("host", "status", "mode", "image", "image ID", "vLLM", "base digest", "note"):
            table.add_column(column, overflow="fold")
        for r in group:
            data = r.payload or {}
            table.add_row(r.host, _status(r.status), data.get("mode", ""), data.get("image", ""),
                          short_image_id(data.get("image_id")), data.get("vllm_version") or "",
                          short_image_id(data.get("base_digest")), r.msg)
        out.print(table)
    return exit_code_of(r.status for r in group)


def _status(status: str):
    return status_text(status)


def _from(data: dict) -> str:
    """Where a host's image came from: another host, or the controller (a fallback says so)."""
    if not data.get("source"):
        return ""
    if data.get("relayed"):
        return f"{data['source']} (host to host)"
    return f"{data['source']} via controller" + (" (fallback)" if data.get("fallback") else "")
