"""ansible_become with sudo: the wrapper's argv (pure), sudo's refusals read as one line (from sudo 1.9.13's
real output), and the become variables read from an inventory, checked at their file:line, the password kept
out of every repr and listing. The wrapper against a real sudo: tests/lab/test_become_lab.py."""

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tritonops.errors import InputError
from tritonops.inventory import load_inventory
from tritonops.transport.become import refusal, sftp_server_command, sudo_argv, wrapped

SECRET = "violet-ostrich-42"


def test_without_a_password_sudo_never_asks_and_with_one_reads_it_from_stdin_only():
    assert sudo_argv("root", password=False) == ("sudo", "-n", "-u", "root", "--")
    assert sudo_argv("svc", password=True) == ("sudo", "-k", "-S", "-p", "", "-u", "svc", "--")


def test_a_command_line_runs_under_sh_as_the_become_user_quoted_as_one_argument():
    command = "cat /opt/x 'a b' | wc -c; echo $HOME"
    line = wrapped(command, "root", password=True)
    assert line == "sudo -k -S -p '' -u root -- /bin/sh -c " + shlex.quote(command)
    assert shlex.split(line)[-1] == command


def test_the_sftp_server_is_the_first_executable_candidate(tmp_path):
    present = tmp_path / "sftp-server"
    present.write_text("#!/bin/sh\n")
    present.chmod(0o755)
    command = sftp_server_command((str(tmp_path / "missing"), str(present), "/bin/sh"))
    found = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True)
    assert (found.returncode, found.stdout) == (0, f"{present}\n")
    none = subprocess.run(["/bin/sh", "-c", sftp_server_command((str(tmp_path / "missing"),))], capture_output=True)
    assert (none.returncode, none.stdout) == (1, b"")


# what sudo 1.9.13p3 (Debian 12) wrote to stderr, captured in a lab host
WRONG_PASSWORD = "Sorry, try again.\n\nsudo: no password was provided\nsudo: 1 incorrect password attempt\n"
NOT_IN_SUDOERS = "nosudo is not in the sudoers file.\n"
NEEDS_PASSWORD = "sudo: a password is required\n"
UNKNOWN_USER = "sudo: unknown user ghost\nsudo: error initializing audit plugin sudoers_audit\n"


def test_what_sudo_said_becomes_one_line_that_says_what_to_do():
    assert refusal(1, WRONG_PASSWORD, "root") == \
        "sudo refused the become password (ansible_become_password / --ask-become-pass)"
    assert refusal(1, NEEDS_PASSWORD, "root") == \
        "sudo needs a password here: set ansible_become_password or pass --ask-become-pass"
    assert refusal(1, NOT_IN_SUDOERS, "root") == \
        "the login user may not run commands as root with sudo (nosudo is not in the sudoers file.)"
    assert refusal(127, "sh: 1: sudo: not found\n", "root") == \
        "sudo is not installed on the host (or not on the login user's PATH)"
    assert refusal(1, UNKNOWN_USER, "ghost") == "sudo exited 1: sudo: error initializing audit plugin sudoers_audit"


def inventory(tmp_path: Path, text: str):
    path = tmp_path / "hosts.yml"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return load_inventory([str(path)], ssh_config_file=os.devnull)


def test_become_variables_reach_the_connection_and_the_password_is_never_shown(tmp_path):
    loaded = inventory(tmp_path, f"""
        all:
          vars:
            ansible_user: deployer
            ansible_become: yes
          hosts:
            h1:
              ansible_become_password: {SECRET}
            h2:
              ansible_become_user: svc
              ansible_become_pass: other-secret
            h3:
              ansible_become: false
    """)
    h1, h2, h3 = (loaded.host(name).connection for name in ("h1", "h2", "h3"))
    assert (h1.become_user, h1.become_password) == ("root", SECRET)
    assert (h2.become_user, h2.become_password) == ("svc", "other-secret")  # the older spelling
    assert (h3.become_user, h3.become_password) == (None, None)
    assert SECRET not in repr(h1) and SECRET not in repr(loaded.host("h1"))


def test_inventory_listings_never_show_the_become_password(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(f"all:\n  hosts:\n    h1:\n      ansible_become: true\n      ansible_become_password: {SECRET}\n")
    for extra in ([], ["--host", "h1"]):
        for json_flag in ([], ["--json"]):
            done = subprocess.run([sys.executable, "-m", "tritonops", "inventory", "-i", str(path), *json_flag,
                                   *extra], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
            assert SECRET not in done.stdout + done.stderr
    listed = subprocess.run([sys.executable, "-m", "tritonops", "inventory", "-i", str(path), "--host", "h1",
                             "--json"], capture_output=True, text=True, timeout=60)
    assert "become_password_set" in listed.stdout and json.loads(listed.stdout)


@pytest.mark.parametrize("line, message", [
    ("ansible_become_method: su", "ansible_become_method 'su' is not supported (tritonops becomes with sudo only)"),
    ("ansible_become: maybe", "ansible_become must be true or false, not 'maybe'"),
    ("ansible_become_user: 'root; reboot'", "ansible_become_user must be a user name"),
    ("ansible_become_user: '-u'", "ansible_become_user must be a user name"),
])
def test_a_bad_become_variable_is_an_error_at_its_line(tmp_path, line, message):
    # the method and the user are checked where become is off too: a typo fails before it is switched on
    with pytest.raises(InputError, match=r"hosts\.yml:4: ") as caught:
        inventory(tmp_path, f"""
            all:
              hosts:
                h1:
                  {line}
        """)
    assert message in str(caught.value)


def test_a_password_of_several_lines_is_refused_without_showing_it(tmp_path):
    with pytest.raises(InputError) as caught:
        inventory(tmp_path, """
            all:
              hosts:
                h1:
                  ansible_become: true
                  ansible_become_password: "first\\nsecond-line-secret"
        """)
    assert "must be one line" in str(caught.value) and "second-line-secret" not in str(caught.value)
