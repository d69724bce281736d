"""Which hosts a command works on: the -i inventory (or ./inventory), how its sources are read, and --limit."""

from __future__ import annotations

import os

from tritonops.errors import InputError


def inventory_paths(given: list[str] | None) -> list[str]:
    """The -i paths (with apply_ansible_config: else $ANSIBLE_INVENTORY, else ansible.cfg's inventory), else
    ./inventory when it exists."""
    if given:
        return list(given)
    if os.path.exists("inventory"):
        return ["inventory"]
    raise InputError("no inventory: pass -i PATH (a file or folder), set ANSIBLE_INVENTORY or ansible.cfg's "
                     "inventory, or create ./inventory", "-i")


def add_connection_options(parser, default) -> None:
    """How hosts are reached when the inventory does not say (Ansible's -u, --private-key, -b): global options.
    The inventory's own ansible_user, ansible_ssh_private_key_file and ansible_become win over them, as in
    Ansible."""
    parser.add_argument("-u", "--user", default=default(None), metavar="REMOTE_USER",
                        help="connect as this user (default: ansible.cfg's remote_user, else your ssh config's)")
    parser.add_argument("--private-key", "--key-file", default=default(None), metavar="FILE",
                        help="SSH private key file (default: ansible.cfg's private_key_file)")
    parser.add_argument("-b", "--become", action="store_true", default=default(False),
                        help="run as root with sudo on the hosts (default: ansible.cfg's become)")


def apply_ansible_config(args, env=None, cwd: str | None = None, home: str | None = None) -> None:
    """Ansible's configuration (inventory.ansible_cfg) under the command line: -i, else $ANSIBLE_INVENTORY, else
    ansible.cfg's inventory; --forks, else theirs, else 10; host_key_checking = False accepts keys seen for the
    first time (--accept-new-host-keys; a changed key is still refused); and the connection defaults
    (args.connection_defaults) of -u / --private-key / -b, else theirs."""
    from tritonops.values.ansible_cfg import ansible_config

    cwd = cwd or os.getcwd()
    config = ansible_config(os.environ if env is None else env, cwd, home or os.path.expanduser("~"))
    where = config.where or {}
    if hasattr(args, "inventory") and not args.inventory and config.inventory:
        args.inventory = list(config.inventory)
    if hasattr(args, "forks") and args.forks is None:
        args.forks = config.forks or 10
    if getattr(args, "accept_new_host_keys", None) is False and config.host_key_checking is False:
        args.accept_new_host_keys = True
    defaults: dict = {}
    for var, given, flag, configured, key in (
            ("ansible_user", getattr(args, "user", None), "-u", config.remote_user, "remote_user"),
            ("ansible_ssh_private_key_file", getattr(args, "private_key", None), "--private-key",
             config.private_key_file, "private_key_file"),
            ("ansible_become", getattr(args, "become", False) or None, "-b", config.become, "become")):
        if given is not None:
            defaults[var] = (given, "command line", flag)
        elif configured is not None:
            defaults[var] = (configured, f"Ansible's configuration ({where[key]})", where[key])
    if defaults:  # the inventory's model (and YAML with it) only when there is something to give it
        from tritonops.inventory.model import Setting

        defaults = {var: Setting(value, source, flag, cwd) for var, (value, source, flag) in defaults.items()}
    args.connection_defaults = defaults


def connection_defaults(args) -> dict:
    """The connection settings below the inventory's own (apply_ansible_config), for load_inventory(defaults=)."""
    return dict(getattr(args, "connection_defaults", None) or {})


def add_inventory_source_options(parser, default) -> None:
    """How -i sources that need Ansible are read (docs/inventory.md): global options, like -i itself."""
    parser.add_argument("--inventory-reader", choices=("auto", "ansible"), default=default("auto"),
                        help="auto (default): the built-in reader for YAML/INI, ansible-inventory for scripts, "
                             "plugins and Vault data; ansible: every -i source through ansible-inventory")
    parser.add_argument("--vault-password-file", "--vault-pass-file", action="append", default=default([]),
                        metavar="FILE", help="vault password file (or executable client) for ansible-inventory")
    parser.add_argument("-J", "--ask-vault-pass", "--ask-vault-password", action="store_true",
                        default=default(False), help="ask for the vault password (once) when a source needs it")


def inventory_reading(args):
    """The AnsibleOptions of these arguments for load_inventory(..., ansible=). --ask-vault-pass asks when a
    source first needs the password, once per run (the answer is kept with the arguments)."""
    from tritonops.inventory.ansible_run import AnsibleOptions

    ask = None
    if getattr(args, "ask_vault_pass", False):
        ask = vars(args).setdefault("vault_password_prompt", _AskOnce())
    return AnsibleOptions(always=getattr(args, "inventory_reader", "auto") == "ansible",
                          vault_password_files=tuple(getattr(args, "vault_password_file", ())),
                          ask_vault_password=ask, on_secret=getattr(args, "hide_secret", None))


class _AskOnce:
    def __init__(self) -> None:
        self._password: str | None = None

    def __call__(self) -> str:
        if self._password is None:
            import getpass

            self._password = getpass.getpass("Vault password: ")
        return self._password

    def __repr__(self) -> str:
        return "AskOnce(****)"


def selected_hosts(args):
    """The inventory's hosts that --limit selects, in inventory order, but the balancers (they serve nothing); at
    least one."""
    from tritonops.inventory import load_inventory
    from tritonops.planning.door import serving_hosts

    hosts = serving_hosts(load_inventory(inventory_paths(args.inventory), extra_vars=become_vars(args),
                                         defaults=connection_defaults(args), ansible=inventory_reading(args))
                          .select(args.limit))
    if not hosts:
        raise InputError(f"no host matches {args.limit!r}", "--limit")
    return hosts


def add_extra_vars_option(parser, help: str = "extra variables, highest precedence (repeatable)") -> None:
    """-e / --extra-vars (K=V or @FILE, repeatable), as ansible-playbook takes it; parse_extra_vars reads it."""
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="K=V|@FILE", help=help)


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
