"""Which hosts a command works on: the -i inventory (or ./inventory) and --limit."""

from __future__ import annotations

import os

from tritonops.errors import InputError


def inventory_paths(given: list[str] | None) -> list[str]:
    """The -i paths, else ./inventory when it exists."""
    if given:
        return list(given)
    if os.path.exists("inventory"):
        return ["inventory"]
    raise InputError("no inventory: pass -i PATH (a file or folder), or create ./inventory", "-i")


def selected_hosts(args):
    """The inventory's hosts that --limit selects, in inventory order, but the balancers (they serve nothing); at
    least one."""
    from tritonops.inventory import load_inventory
    from tritonops.planning.balancer import serving_hosts

    hosts = serving_hosts(load_inventory(inventory_paths(args.inventory), extra_vars=become_vars(args))
                          .select(args.limit))
    if not hosts:
        raise InputError(f"no host matches {args.limit!r}", "--limit")
    return hosts


def add_host_key_option(parser) -> None:
    """--accept-new-host-keys, for every command that opens SSH sessions."""
    parser.add_argument("--accept-new-host-keys", action="store_true",
                        help="trust and record host keys seen for the first time (a changed key is still refused)")
    parser.add_argument("-K", "--ask-become-pass", action="store_true",
                        help="ask once for the sudo password of the hosts with ansible_become (read without echo; "
                             "given to sudo on its stdin only)")


def become_vars(args) -> dict:
    """--ask-become-pass: {'ansible_become_password': what was typed}, asked once per run (as -e would give
    it, so it is every selected host's); else {}."""
    if not getattr(args, "ask_become_pass", False):
        return {}
    if getattr(args, "become_password", None) is None:
        import getpass

        args.become_password = getpass.getpass("BECOME password: ")
    return {"ansible_become_password": args.become_password}
