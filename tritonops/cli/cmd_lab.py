"""`tritonops lab up|down|status`: real SSH hosts with simulated GPUs on this machine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.output import status_text, styled
from tritonops.exit_codes import ExitCode, exit_code_of
from tritonops.lab.defaults import DEFAULT_PREFIX, PORT_BASE
from tritonops.results import Recap

if TYPE_CHECKING:
    from tritonops.lab.state import LabState


def register(subparsers, common) -> None:
    parser = subparsers.add_parser("lab", parents=[common], help=COMMANDS["lab"],
                                   description="Real SSH hosts (containers) with simulated GPUs on this machine.")
    actions = parser.add_subparsers(dest="lab_action", metavar="ACTION", required=True)
    shared = type(common)(add_help=False)
    shared.add_argument("--state-dir", default=None, metavar="DIR",
                        help="keys, known_hosts, ports and logs (default: .lab/ at the repository root)")
    shared.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"container name prefix ({DEFAULT_PREFIX})")
    shared.add_argument("--inventory-out", default=None, metavar="PATH",
                        help="where `lab up` writes the inventory (default: inventory/lab.yml, "
                             "or DIR/inventory.yml with --state-dir)")

    up = actions.add_parser("up", parents=[common, shared], help="create or update the lab (idempotent)")
    up.add_argument("--hosts", default=None, metavar="NAME=PROFILE[:full|light|bastion|balancer],...",
                    help="hosts to run (default: ws-2080ti=2080ti, node-a100x4=a100x4, node-h200x8=h200x8, all full)")
    up.add_argument("--light", type=int, default=0, metavar="N", help="add N light hosts light-01..N")
    up.add_argument("--light-profile", default="h200x8", metavar="PROFILE", help="GPU profile of --light hosts")
    up.add_argument("--bastion", action="store_true",
                    help="add a bastion host and write the inventory so the others are reached only through it")
    up.add_argument("--balancers", type=int, default=0, metavar="N",
                    help="add N balancer hosts balancer-1..N (sshd + Debian's haproxy, no GPU): the inventory's "
                         "tritonops_balancers, the front door")
    up.add_argument("--port-base", type=int, default=PORT_BASE, help=f"first sshd port on 127.0.0.1 ({PORT_BASE})")
    up.set_defaults(run=run_up)

    down = actions.add_parser("down", parents=[common, shared], help="remove the lab's containers, volumes, network")
    down.add_argument("--purge", action="store_true", help="also remove the lab's images from the local engine")
    down.set_defaults(run=run_down)

    status = actions.add_parser("status", parents=[common, shared], help="list lab hosts and whether sshd answers")
    status.set_defaults(run=run_status)


def run_up(args, out) -> int:
    from tritonops.lab import api
    from tritonops.lab.request import build_request

    request = build_request(args.hosts, args.light, args.light_profile, bastion=args.bastion,
                            balancers=args.balancers)
    if not args.json:
        out.info(f"lab up: {len(request.hosts)} host(s); the first run builds images (a few minutes)")
    state = api.up(request, state_dir=args.state_dir, name_prefix=args.prefix, inventory_out=args.inventory_out,
                   port_base=args.port_base)
    _render(state, out, "lab up", results=True)
    return exit_code_of(r.status for r in state.results)


def run_down(args, out) -> int:
    from tritonops.lab import api

    state = api.down(state_dir=args.state_dir, name_prefix=args.prefix, inventory_out=args.inventory_out,
                     purge=args.purge)
    _render(state, out, "lab down", results=True)
    return exit_code_of(r.status for r in state.results)


def run_status(args, out) -> int:
    from tritonops.lab import api

    state = api.status(state_dir=args.state_dir, name_prefix=args.prefix, inventory_out=args.inventory_out)
    _render(state, out, "lab status", results=False)
    return ExitCode.OK if all(h.healthy for h in state.hosts) else ExitCode.HOST_FAILED


def _render(state: LabState, out, command: str, results: bool) -> None:
    if out.json_mode:
        from tritonops.cli.result_json import document

        summary = {key: value for key, value in state.to_json().items() if key != "results"}
        out.json(document(command, state.results, payload=lambda result: None, **summary))
        return
    from rich.table import Table

    for note in state.notes:
        out.info(note)
    if results and len(state.results):
        table = Table(title="lab")
        for col in ("host", "status", "msg", "time"):
            table.add_column(col)
        for r in state.results:
            table.add_row(r.host, status_text(r.status), r.msg, f"{r.elapsed_s:.1f}s")
        out.print(table)
        totals = Recap.of(state.results).totals()
        counts = {status: totals.get(status, 0) for status in ("ok", "changed", "failed")}
        summary = "no change" if not state.changed and not counts["failed"] else \
            ", ".join(f"{k}={v}" for k, v in counts.items())
        out.print(f"lab {state.prefix}: {summary}")
    if state.hosts:
        table = Table(title=f"lab hosts ({state.prefix})")
        for col in ("host", "kind", "profile", "address", "container", "state"):
            table.add_column(col)
        for h in state.hosts:
            health = styled("healthy", "green") if h.healthy else \
                styled("sshd not answering" if h.running else "stopped", "red")
            table.add_row(h.name, h.kind, h.profile, f"{h.address}:{h.port}", h.container, health)
        out.print(table)
        if results:
            out.print(f"inventory: {state.inventory_file}")
    elif not results:
        out.print(f"no lab hosts ({state.prefix})")
