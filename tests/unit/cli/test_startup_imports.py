"""Start-up: `tritonops --help`, `--version` and usage errors load no third-party library, and a
command loads only what it uses. Checked on the import graph (sys.modules in a fresh interpreter),
not on a timing: a heavy import added at the top of any command module fails here on every machine.
"""

import json
import subprocess
import sys

import pytest

from tests.support.startup import loaded, report
from tritonops.cli.main import COMMANDS

# What each costs at start-up (python -X importtime, 2-core lab machine): paramiko (with
# cryptography) ~0.2 s, pydantic and the facts model ~0.15 s, fabric/invoke ~0.1 s, rich ~0.08 s,
# jinja2 ~0.04 s, docker (with requests) ~0.1 s.
HEAVY = frozenset({"rich", "pydantic", "pydantic_core", "yaml", "jinja2", "paramiko", "fabric", "invoke",
                   "docker", "requests", "urllib3", "cryptography", "nacl", "bcrypt", "pynvml", "regex",
                   "jsonschema", "markupsafe"})


@pytest.mark.parametrize("argv", [["--help"], ["--version"], [], ["no-such-command"], ["probe", "--no-such-flag"],
                                  ["--forks", "x", "probe"]])
def test_help_version_and_usage_errors_load_no_library(argv):
    code, modules = loaded(*argv)
    assert code in (0, 5)  # help and version 0, a usage mistake 5 (bad options)
    assert not modules & HEAVY, sorted(modules & HEAVY)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_commands_help_loads_no_library(command):
    code, modules = loaded(command, "--help")
    assert code == 0
    assert not modules & HEAVY, sorted(modules & HEAVY)


def test_a_named_command_loads_its_own_module_only():
    assert report("-i", "x", "probe", "--help")["commands"] == ["tritonops.cli.cmd_probe"]
    assert report("--help")["commands"] == []  # listed from COMMANDS, no module registered
    assert report("no-such-command")["commands"] == []
    assert report("--version")["commands"] == []  # answered before any command is registered


def test_help_lists_every_command_with_the_summary_its_own_parser_has(capsys):
    """`tritonops --help` lists the commands from COMMANDS without their modules; the text is the same as
    with every module registered."""
    from tritonops.cli.main import build_parser

    texts = []
    for commands in ((), tuple(COMMANDS)):
        build_parser(commands).print_help()
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1]
    for name, summary in COMMANDS.items():
        assert name in texts[0] and summary.split()[0] in texts[0]


def test_a_command_line_the_pre_reading_cannot_place_is_parsed_with_the_command_module(monkeypatch):
    """Should named_command ever miss a valid command line, the command is parsed again with its module
    (never run without it)."""
    from tritonops.cli import main as cli

    monkeypatch.setattr(cli, "named_command", lambda argv: None)
    assert cli.main(["size", "--list-gpus", "--json"]) == 0


@pytest.mark.parametrize("argv", [["probe", "--help"], ["lab", "up", "--help"], ["probe", "--forks", "x"],
                                  ["size", "--no-such-flag"]])
def test_a_named_command_parses_as_with_every_command_registered(argv, capsys):
    """Help and usage errors are the same text whether one command or all are registered."""
    from tritonops.cli.main import build_parser

    outputs = []
    for parser in (build_parser(), build_parser((argv[0],))):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(argv)
        captured = capsys.readouterr()
        outputs.append((exit_.value.code, captured.out, captured.err))
    assert outputs[0] == outputs[1]


def test_every_command_module_is_in_the_table():
    """A cmd_*.py left out of COMMANDS would be a command nobody can run."""
    from pathlib import Path

    import tritonops.cli

    modules = {path.stem[len("cmd_"):] for path in Path(tritonops.cli.__file__).parent.glob("cmd_*.py")}
    assert modules == set(COMMANDS)


def test_probe_of_this_machine_as_json_loads_neither_rich_nor_ssh_nor_pydantic():
    """`probe --local --json`: the facts model (plain dataclasses) and the probe bundle (pynvml); nothing to
    draw tables with, no SSH library, and no pydantic (the probe's parser checks the host's output itself)."""
    code, modules = loaded("probe", "--local", "--json")
    assert code in (0, 2)  # this machine has no NVIDIA driver: the host failed
    assert not modules & {"rich", "paramiko", "fabric", "invoke", "docker", "jinja2", "yaml", "cryptography",
                          "pydantic", "pydantic_core"}


def test_inventory_as_json_does_not_load_ssh_or_tables(tmp_path):
    """Reading an inventory needs YAML; paramiko only when there is an SSH client config to read."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    gpu1:\n      ansible_host: 10.0.0.1\n")
    code, modules = loaded("inventory", "-i", str(inventory), "--json")
    assert code == 0
    assert "yaml" in modules
    assert not modules & {"rich", "paramiko", "fabric", "invoke", "docker", "jinja2", "pydantic", "cryptography",
                          "regex"}


def test_size_lists_gpus_as_json_without_ssh_or_tables():
    code, modules = loaded("size", "--list-gpus", "--json")
    assert code == 0
    assert not modules & {"rich", "paramiko", "fabric", "invoke", "docker", "jinja2", "yaml", "cryptography"}


def test_ssh_loads_paramiko_without_invoke_and_match_exec_still_works(tmp_path):
    """paramiko imports invoke (0.1-0.2 s) only for Match exec, which tritonops runs itself: hidden
    while paramiko loads (transport/paramiko_lib.py), importable afterwards."""
    config = tmp_path / "ssh_config"
    config.write_text('Match exec "true"\n  User through-exec\n')
    script = (
        "import sys\n"
        "import tritonops.transport.ssh\n"
        "from tritonops.inventory.ssh_config import load_ssh_config, lookup\n"
        "loaded = 'invoke' in sys.modules\n"
        f"config, path = load_ssh_config({str(config)!r})\n"
        "print(loaded, lookup(config, 'gpu1', path)['user'])\n"
        "import invoke\n"
        "print(invoke.__name__)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["False", "through-exec", "invoke"], done.stderr


def test_paramiko_knows_its_own_version_without_importlib_metadata():
    """paramiko's __init__ reads its version (its SSH banner carries it) through importlib.metadata (~30 ms
    of imports); a stand-in reads it from the dist-info folder while paramiko loads, then is gone."""
    script = (
        "import sys\n"
        "from tritonops.transport.paramiko_lib import paramiko\n"
        "print('importlib.metadata' in sys.modules, 'email' in sys.modules)\n"
        "import importlib.metadata\n"
        "print(paramiko.__version__ == importlib.metadata.version('paramiko'), paramiko.Transport._CLIENT_ID)\n"
        "print(importlib.metadata.distributions is not None)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    from importlib.metadata import version

    assert done.stdout.split() == ["False", "False", "True", f"paramiko_{version('paramiko')}", "True"], done.stderr


def test_the_version_stand_in_asks_the_real_module_for_what_it_cannot_place():
    from tritonops.transport import paramiko_lib

    stand_in = paramiko_lib._own_version_module()
    from importlib.metadata import version

    assert stand_in.version("pyyaml") == version("pyyaml")  # its dist-info folder is PyYAML-..., not pyyaml-
    assert stand_in.version("paramiko") == version("paramiko")
    assert paramiko_lib._dist_info_version("no-such-package-here") is None
    assert callable(stand_in.distributions)


def test_the_program_exits_with_mains_code_and_all_its_output(tmp_path):
    """`program()` (the installed script, `python -m tritonops`) freezes the heap before the interpreter's
    exit; the exit code and every byte written still come out."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n" + "".join(f"    gpu{i}:\n      ansible_host: 10.0.0.{i}\n"
                                                      for i in range(1, 200)))
    done = subprocess.run([sys.executable, "-m", "tritonops", "inventory", "-i", str(inventory), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["_meta"]["hostvars"]) == 199
    bad = subprocess.run([sys.executable, "-m", "tritonops", "probe", "--no-such-flag"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 5 and "--no-such-flag" in bad.stderr
