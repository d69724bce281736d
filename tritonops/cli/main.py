"""`tritonops` entry point: global options, one module per command.

Each command module `tritonops/cli/cmd_<name>.py` exposes `register(subparsers, common)` and
`run(args, out)` returning the exit code; adding a command is one line in COMMANDS (cli/commands.py: its
name and the one-line summary `tritonops --help` lists). Global options (-i, --limit, --forks, --json, -v) are
accepted before or after the command name.

A command line that names a command (`tritonops probe ...`) registers that command's module only;
`--help`, `--version`, no command or an unknown one register none: the commands are listed from
COMMANDS (a command reached that way after all is parsed again with its module). So a module imports at
its top only the standard library and light tritonops modules; what its `run` needs (rich, pydantic,
paramiko, docker, jinja2, yaml) is imported inside the functions that use it. `--help`, `--version`
and usage errors then cost the interpreter and argparse only (tests/unit/cli/test_startup_imports.py).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys

from tritonops import __version__
from tritonops.cli.commands import COMMANDS
from tritonops.cli.selection import add_connection_options, add_inventory_source_options, apply_ansible_config
from tritonops.errors import TritonopsError
from tritonops.exit_codes import ExitCode


class _Parser(argparse.ArgumentParser):
    """A usage mistake exits 5, ansible-playbook's code for bad options (argparse's own is 2, which
    here means a host failed)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(ExitCode.BAD_INPUT, f"{self.prog}: error: {message}\n")

def _global_options(suppress_defaults: bool) -> argparse.ArgumentParser:
    """The options every command takes. Subcommands suppress defaults so a value
    given before the command name is not overwritten by the subparser."""
    default = (lambda value: argparse.SUPPRESS) if suppress_defaults else (lambda value: value)
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("-i", "--inventory", action="append", default=default([]), metavar="PATH",
                        help="inventory file or folder (repeatable)")
    parent.add_argument("--limit", "-l", default=default(None), metavar="PATTERN",
                        help="Ansible host pattern: group, host, a:b, a:&b, a:!b, wildcards")
    parent.add_argument("--forks", "-f", type=int, default=default(None), metavar="N",
                        help="hosts worked on at once (default: ansible.cfg's forks, else 10)")
    parent.add_argument("--json", action="store_true", default=default(False),
                        help="machine-readable output")
    parent.add_argument("-v", "--verbose", action="count", default=default(0))
    add_inventory_source_options(parent, default)
    add_connection_options(parent, default)
    return parent


def build_parser(commands: tuple[str, ...] = tuple(COMMANDS)) -> argparse.ArgumentParser:
    """The parser with the modules of `commands` registered; every other command is listed by its name
    and summary only (main never runs one of those)."""
    parser = _Parser(
        prog="tritonops",
        description="Turn bare-metal GPU hosts into a Triton Inference Server + vLLM serving fleet.",
        parents=[_global_options(suppress_defaults=False)],
    )
    parser.add_argument("--version", action="version", version=f"tritonops {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _global_options(suppress_defaults=True)
    for name, summary in COMMANDS.items():
        if name in commands:
            importlib.import_module(f"tritonops.cli.cmd_{name}").register(subparsers, common)
        else:
            subparsers.add_parser(name, help=summary, add_help=False)
    return parser


class _NotClear(Exception):
    pass


class _PreParser(argparse.ArgumentParser):
    def error(self, message):
        raise _NotClear(message)


def named_command(argv: list[str]) -> str | None:
    """The command the line names, when only global options come before it (read by the same option
    definitions as the real parser); None when anything else does (--help, a mistake). `--version`
    before any command is answered here, as the full parser would, without registering a command."""
    pre = _PreParser(prog="tritonops", add_help=False, parents=[_global_options(suppress_defaults=False)])
    pre.add_argument("--version", action="version", version=f"tritonops {__version__}")  # answered here
    pre.add_argument("command", nargs="?")
    pre.add_argument("rest", nargs=argparse.REMAINDER)
    try:
        known, unknown = pre.parse_known_args(argv)
    except _NotClear:
        return None
    return known.command if known.command in COMMANDS and not unknown else None


def _quiet_libraries(verbosity: int) -> None:
    """paramiko logs its transport threads' failures, tracebacks included, through logging's
    last-resort handler onto stderr; each host's result already says what happened in one line.
    -vvv lets them through for debugging."""
    import logging

    paramiko_log = logging.getLogger("paramiko")
    if not paramiko_log.handlers:
        paramiko_log.addHandler(logging.NullHandler())
    paramiko_log.propagate = verbosity >= 3


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    named = named_command(argv)
    parser = build_parser((named,) if named else ())
    if not named:  # help, a mistake, or a line named_command cannot read: parsed with its command's module
        known, _ = parser.parse_known_args(argv)
        if known.command:
            parser = build_parser((known.command,))
    args = parser.parse_args(argv)
    from tritonops.cli.output import Output

    out = Output(json_mode=args.json, verbosity=args.verbose)
    args.hide_secret = out.hide  # the inventory's decrypted Vault values, masked in all the run writes (selection.py)
    _quiet_libraries(args.verbose)
    if not args.command:
        parser.print_help()
        return ExitCode.BAD_INPUT
    try:
        apply_ansible_config(args)
        return args.run(args, out)
    except TritonopsError as err:
        out.error(str(err))
        return err.exit_code
    except KeyboardInterrupt:
        out.error("interrupted")
        return ExitCode.INTERRUPTED


def program() -> None:
    """The `tritonops` executable (the package's script, and `python -m tritonops`): main(), then the
    exit, leaving out the interpreter's last garbage collection. That collection walks every object the
    run made (paramiko, cryptography, the facts) only to free memory the process is giving back anyway:
    ~0.1 s of a 0.5 s probe (docs/performance.md). Frozen objects are left to the process's end; the rest
    of the shutdown (atexit handlers, flushing the output) runs as usual. Not done inside main(), which
    tests call in a process that lives on."""
    code = main()
    gc.freeze()
    raise SystemExit(code)


if __name__ == "__main__":
    program()
