"""`tritonops inventory`: the hosts, the group tree, one host's variables and how each host is reached."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from tritonops.cli.commands import COMMANDS
from tritonops.cli.output import styled
from tritonops.cli.selection import add_extra_vars_option, connection_defaults, inventory_paths, inventory_reading
from tritonops.redact import SecretText, is_secret_name, redact_text, redact_value

if TYPE_CHECKING:
    from rich.table import Table

    from tritonops.inventory import Host, Inventory


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "inventory", parents=[common], help=COMMANDS["inventory"],
        description="Show the inventory. Default: a table of hosts and how each is reached.")
    view = parser.add_mutually_exclusive_group()
    view.add_argument("--list", action="store_true", help="a table of hosts and their connection (default)")
    view.add_argument("--graph", action="store_true", help="the group tree, like ansible-inventory --graph")
    view.add_argument("--host", metavar="NAME", help="every variable of one host, with where it was set")
    add_extra_vars_option(parser, "extra variables, as deploy takes them (highest precedence; repeatable)")
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.inventory import load_inventory

    inventory = load_inventory(inventory_paths(args.inventory), extra_vars=_extra_vars(args.extra_vars),
                               defaults=connection_defaults(args), ansible=inventory_reading(args))
    for warning in inventory.warnings:
        out.info(f"warning: {warning}")
    if args.host:
        host = inventory.host(args.host)
        if args.json:
            out.json(_host_json(host))
        else:
            _print_host(host, out)
        return 0
    hosts = inventory.select(args.limit)
    if args.json:
        out.json(_list_json(inventory, hosts))
    elif args.graph:
        for line in graph_lines(inventory, hosts):
            out.print(styled(line))
    else:
        out.print(_host_table(inventory, hosts))
    return 0


def _extra_vars(given: list[str]) -> dict:
    """-e as deploy reads it; the playbook package (jinja2) is loaded only when -e is given."""
    if not given:
        return {}
    from tritonops.playbook.extra_vars import parse_extra_vars

    return parse_extra_vars(given)


def graph_lines(inventory: Inventory, hosts: tuple[Host, ...]) -> list[str]:
    """The group tree in inventory order, groups before hosts, like `ansible-inventory --graph`.
    Under --limit only the groups holding a selected host are drawn."""
    wanted = _group_filter(inventory, hosts)
    shown = {host.name for host in hosts}
    lines: list[str] = []

    def walk(group: str, depth: int) -> None:
        lines.append(f"{_branch(depth)}@{group}:")
        for child in inventory.groups[group].children:
            if wanted(child):
                walk(child, depth + 1)
        lines.extend(f"{_branch(depth + 1)}{name}" for name in inventory.groups[group].hosts if name in shown)

    walk("all", 0)
    return lines


def _branch(depth: int) -> str:
    return "" if depth == 0 else "  " + "|  " * (depth - 1) + "|--"


def _group_filter(inventory: Inventory, hosts: tuple[Host, ...]):
    """Every group when every host is shown (empty groups too); else groups holding a shown host."""
    if len(hosts) == len(inventory.hosts):
        return lambda group: True
    shown = {host.name for host in hosts}
    return lambda group: any(host.name in shown for host in inventory.hosts_in(group))


def _host_table(inventory: Inventory, hosts: tuple[Host, ...]) -> Table:
    from rich.table import Table

    table = Table(title=styled(f"{len(hosts)} of {len(inventory.hosts)} hosts ({', '.join(inventory.sources)})"),
                  title_justify="left")
    for column in ("host", "groups", "address", "port", "user", "key", "proxy", "known_hosts"):
        table.add_column(column)
    for host in hosts:
        spec = host.connection
        table.add_row(*map(styled, (
            host.name,
            ", ".join(group for group in host.groups if group != "all"),
            "local" if spec.local else spec.host,
            _or_dash(spec.port),
            _or_dash(spec.user),
            ", ".join(spec.key_files) or "-",
            _proxy(host),
            _or_dash(spec.known_hosts_file),
        )))
    return table


def _print_host(host: Host, out) -> None:
    from rich.table import Table

    table = Table(title=styled(f"{host.name}  (groups: {', '.join(host.groups)})"), title_justify="left")
    for column in ("variable", "value", "source"):
        table.add_column(column)
    for name in sorted(host.vars):
        history = host.history[name]
        table.add_row(styled(name), styled(_shown_value(name, host.vars[name])), styled(history[-1].source))
        if out.verbosity:
            for overridden in reversed(history[:-1]):
                table.add_row("", styled(f"overrides {_shown_value(name, overridden.value)}", "dim"),
                              styled(overridden.source, "dim"))
    out.print(table)
    out.print(styled(f"connection: {_connection_summary(host)}"))


def _shown_value(name: str, value: Any) -> str:
    shown = redact_value(name, value)
    return shown if isinstance(shown, str) else json.dumps(_jsonable(shown))


def _connection_summary(host: Host) -> str:
    spec = host.connection
    if spec.local:
        return "local (no SSH)"
    parts = [spec.label, f"host keys: {spec.strict_host_key_checking}",
             f"timeout {spec.connect_timeout_s:g}s"]
    if spec.key_files:
        parts.append(f"key {', '.join(spec.key_files)}")
    if spec.proxy_command or spec.proxy_jump:
        parts.append(_proxy(host))
    if spec.known_hosts_file:
        parts.append(f"known_hosts {spec.known_hosts_file}")
    if spec.become_user:
        parts.append(f"become {spec.become_user} with sudo")
    return "; ".join(parts)


def _proxy(host: Host) -> str:
    spec = host.connection
    if spec.proxy_jump:
        return f"ProxyJump {spec.proxy_jump}"
    if spec.proxy_command:
        return f"ProxyCommand {redact_text(spec.proxy_command)}"
    return "-"


def _or_dash(value: Any) -> str:
    return "-" if value is None else str(value)


def _connection_json(host: Host) -> dict[str, Any]:
    data = dataclasses.asdict(host.connection)
    del data["opener"]  # set only for tritonops.api's fabric hosts: code, not a setting
    data["password_set"] = data.pop("password") is not None
    data["become_password_set"] = data.pop("become_password") is not None
    data["key_files"] = list(data["key_files"])
    return data


def _public_vars(host: Host) -> dict[str, Any]:
    return {name: _jsonable(redact_value(name, value)) for name, value in host.vars.items()
            if not _is_secret(name, value)}


def _is_secret(name: str, value: Any) -> bool:
    """Left out of --json: a secret by its name, or a value Ansible Vault decrypted (SecretText)."""
    return is_secret_name(name) or isinstance(value, SecretText)


def _host_json(host: Host) -> dict[str, Any]:
    return {
        "host": host.name,
        "groups": list(host.groups),
        "vars": _public_vars(host),
        "sources": {name: host.var_source(name) for name, value in host.vars.items() if not _is_secret(name, value)},
        "_connection": _connection_json(host),
    }


def _list_json(inventory: Inventory, hosts: tuple[Host, ...]) -> dict[str, Any]:
    """ansible-inventory --list, plus a _connection per host; secrets left out."""
    shown = {host.name for host in hosts}
    wanted = _group_filter(inventory, hosts)
    data: dict[str, Any] = {"_meta": {"hostvars": {
        host.name: {**_public_vars(host), "_connection": _connection_json(host)} for host in hosts}}}
    for name, group in inventory.groups.items():
        if not wanted(name):
            continue
        children = [child for child in group.children if wanted(child)]
        members = [host for host in group.hosts if host in shown]
        data[name] = {key: value for key, value in (("children", children), ("hosts", members)) if value}
    return data


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
