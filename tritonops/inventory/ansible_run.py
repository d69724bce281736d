"""Running `ansible-inventory` (and `ansible-vault` for `!vault` values) for the -i sources the built-in
reader leaves to Ansible (ansible_sources.py).

ansible-core is an external program found on PATH, never imported: `pip install ansible-core` (or
`pip install 'tritonops[ansible]'`). Every command is an argv list; the source is an argument of its own.

The vault password never reaches a command line, the environment or a file. `--vault-password-file F`
is passed through as given (F may be a file or an executable password client, as in Ansible). A
password asked with --ask-vault-pass is written into a pipe made for each run and handed to the program
as `--vault-password-file /dev/fd/N` (the pipe's read end, inherited by that program only): Ansible reads
it like a file, nothing is left on disk if tritonops is killed, and no other process (an inventory script
Ansible starts included: its file descriptors are closed) can read it. A 0600 temporary file would sit
on disk until removed; an environment variable would reach every child of ansible-inventory.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from tritonops.errors import InputError, TritonopsError
from tritonops.exit_codes import ExitCode

RUN_TIMEOUT_S = 300  # a cloud plugin may list thousands of hosts; a hung script is cut off, said so
_MISSING = "needs ansible-core: pip install ansible-core (it provides ansible-inventory)"


class AnsibleInventoryError(TritonopsError):
    """ansible-inventory (or ansible-vault) could not give the inventory: one line saying why."""

    exit_code = ExitCode.BAD_INPUT


@dataclass(frozen=True)
class AnsibleOptions:
    """How sources that need Ansible are read: --inventory-reader, --vault-password-file, --ask-vault-pass."""

    always: bool = False  # every -i source through ansible-inventory, even plain YAML/INI
    vault_password_files: tuple[str, ...] = ()
    ask_vault_password: Callable[[], str] | None = field(default=None, repr=False)  # asks once, remembers
    on_secret: Callable[[str], None] | None = field(default=None, repr=False)  # told each value marked secret


def run_ansible_inventory(source: str, options: AnsibleOptions) -> Any:
    """The parsed `ansible-inventory -i SOURCE --list --export` of one source."""
    program = _program("ansible-inventory", source)
    with _vault_arguments(options) as (vault_args, fds):
        argv = [program, "-i", source, "--list", "--export", *vault_args]
        result = _run(argv, source, fds, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise AnsibleInventoryError(f"ansible-inventory could not read {source}: {failure_line(result.stderr)}")
    try:
        return json.loads(result.stdout)
    except ValueError as err:
        raise AnsibleInventoryError(f"ansible-inventory gave {source} as JSON it cannot read: {err}") from None


def decrypt_vault_values(values: Iterable[tuple[str, str]], source: str, options: AnsibleOptions) -> dict[str, str]:
    """Each distinct ciphertext's plain text, by `ansible-vault decrypt` (stdin to stdout, nothing on disk);
    `values` is (where, ciphertext) as ansible_list.vault_ciphertexts gives them."""
    plain: dict[str, str] = {}
    for where, ciphertext in values:
        if ciphertext not in plain:
            plain[ciphertext] = decrypt_vault_text(ciphertext, f"the Vault value of {where}", source, options)
    return plain


def decrypt_vault_text(ciphertext: str, what: str, source: str, options: AnsibleOptions) -> str:
    """One ciphertext's plain text: `ansible-vault decrypt --output -`, the ciphertext on its stdin."""
    if not _has_vault_password(options):  # ansible-vault would prompt, reading the ciphertext as the password
        raise AnsibleInventoryError(f"{source}: {what} needs a vault password: pass --vault-password-file "
                                    "FILE or --ask-vault-pass")
    program = _program("ansible-vault", source)
    with _vault_arguments(options) as (vault_args, fds):
        result = _run([program, "decrypt", *vault_args, "--output", "-"], source, fds, stdin=ciphertext)
    if result.returncode != 0:
        raise AnsibleInventoryError(f"{source}: cannot decrypt {what} ({failure_line(result.stderr)})")
    return result.stdout


def _has_vault_password(options: AnsibleOptions) -> bool:
    """A password the user gave: ours, or Ansible's own environment variables for it."""
    return bool(options.vault_password_files or options.ask_vault_password
                or os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE") or os.environ.get("ANSIBLE_VAULT_IDENTITY_LIST"))


def failure_line(stderr: str) -> str:
    """One line from Ansible's stderr: its [ERROR] (said plainly for a vault password), and the reason a
    plugin gave, which the error alone hides ('Inventory script returned non-zero exit code 3')."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line.removeprefix("[ERROR]:").strip() for line in lines if line.startswith("[ERROR]")]
    last = errors[-1] if errors else (lines[-1] if lines else "it failed and said nothing")
    if "no vault secrets were found that could decrypt" in last:
        return "wrong vault password, Decryption failed"
    if "no vault secrets found" in last:
        return "it holds Ansible Vault data: pass --vault-password-file FILE or --ask-vault-pass"
    reasons = [line.split(":", 2)[-1].strip() for line in lines
               if line.startswith("[WARNING]: Failed to parse inventory with")]
    script_error = _after(lines, "Standard error from inventory script:")
    detail = "; ".join(part for part in (reasons[0] if reasons else "", script_error) if part)
    return f"{last} ({detail})" if detail and detail not in last else last


def _after(lines: list[str], heading: str) -> str:
    for index, line in enumerate(lines[:-1]):
        if line == heading:
            return lines[index + 1]
    return ""


def _program(name: str, source: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise AnsibleInventoryError(f"{source}: reading this inventory {_MISSING}")
    return found


def _run(argv: Sequence[str], source: str, fds: tuple[int, ...], *, stdin) -> subprocess.CompletedProcess:
    text_input = stdin if isinstance(stdin, str) else None
    try:
        return subprocess.run(list(argv), input=text_input, stdin=None if text_input is not None else stdin,
                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S, pass_fds=fds,
                              env=_environment(), check=False)
    except subprocess.TimeoutExpired:
        raise AnsibleInventoryError(f"{os.path.basename(argv[0])} gave nothing for {source} within "
                                    f"{RUN_TIMEOUT_S} s") from None
    except OSError as err:
        raise AnsibleInventoryError(f"{source}: cannot run {argv[0]}: {err.strerror or err}") from None


def _environment() -> dict[str, str]:
    """The user's environment (ANSIBLE_CONFIG, a cloud plugin's credentials), with a source that no
    plugin can parse made an error: by default Ansible warns and lists an empty inventory."""
    return {**os.environ, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True", "ANSIBLE_NOCOLOR": "True",
            "ANSIBLE_FORCE_COLOR": "False"}


@contextmanager
def _vault_arguments(options: AnsibleOptions) -> Iterator[tuple[list[str], tuple[int, ...]]]:
    """(--vault-password-file arguments, file descriptors the program inherits) for one run."""
    arguments: list[str] = []
    for path in options.vault_password_files:
        arguments += ["--vault-password-file", path]
    if options.ask_vault_password is None:
        yield arguments, ()
        return
    with ExitStack() as stack:
        fd = _password_pipe(options.ask_vault_password())
        stack.callback(os.close, fd)
        yield [*arguments, "--vault-password-file", f"/dev/fd/{fd}"], (fd,)


def _password_pipe(password: str) -> int:
    """The read end of a pipe holding the password (and its newline), the write end closed."""
    data = password.encode("utf-8") + b"\n"
    if len(data) > 60_000:  # a pipe's buffer: a longer write would block before the program runs
        raise InputError("the vault password is too long", "--ask-vault-pass")
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
    finally:
        os.close(write_end)
    return read_end
