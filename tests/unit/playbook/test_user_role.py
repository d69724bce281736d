"""A user's own role (defaults, tasks, templates/, files/) with Ansible's copy, template, file, command and debug,
run by `tritonops playbook` on this machine (ansible_connection: local, real files, real commands): first
`changed`, then every task `ok`, `--check` changes nothing and `--diff` shows the change; mistakes in the
arguments are one line at the task's file:line (exit 5) before anything runs. tests/lab/test_user_role_lab.py
runs the same role on a lab host over SSH."""

from __future__ import annotations

import grp
import os
import stat

import pytest

from tests.support.paths import REPO
from tests.support.user_role import SECRET, TASK_NAMES, TASKS, messages, run_playbook_cli, statuses, write_user_role
from tritonops.cli.main import main


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "host" / "app"
    site = write_user_role(tmp_path / "project", str(root), grp.getgrgid(os.getgid()).gr_name)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    here: {ansible_connection: local}\n")
    return site, str(inventory), root


def test_a_users_role_runs_changed_then_ok_and_check_changes_nothing(capsys, project):
    site, inventory, root = project
    code, first, shown = run_playbook_cli(capsys, str(site), "-i", inventory)
    assert code == 0, messages(first)
    assert statuses(first) == {**dict.fromkeys(TASK_NAMES[:8], "changed"), "nothing stale": "ok", "say where": "ok",
                               "show the key": "ok"}
    assert messages(first)["say where"] == "here serves on 8080"
    assert messages(first)["show the key"] == "app_api_key: (hidden)" and SECRET not in shown

    assert stat.S_IMODE(root.stat().st_mode) == 0o750
    assert (root / "app.conf").read_text() == "port = 8080\nhost = here\n"
    assert stat.S_IMODE((root / "app.conf").stat().st_mode) == 0o640
    assert (root / "banner.txt").read_text() == "welcome\n"
    assert (root / "note").read_text() == "port 8080\n"
    assert os.readlink(root / "current") == "app.conf"
    assert (root / "ready").read_text() == "" and stat.S_IMODE((root / "ready").stat().st_mode) == 0o600
    assert (root / "init.log").read_text() == "ran\n"

    code, second, _ = run_playbook_cli(capsys, str(site), "-i", inventory)
    assert code == 0 and set(statuses(second).values()) == {"ok"}, messages(second)
    assert (root / "init.log").read_text() == "ran\n"  # creates: it ran once

    (root / "stale").mkdir()
    code, checked, _ = run_playbook_cli(capsys, str(site), "-i", inventory, "--check", "--diff",
                                        "-e", "app_port=9090")
    assert code == 0 and checked["check"] is True
    assert [task for task, status in statuses(checked).items() if status == "changed"] == \
        ["settings", "inline note", "nothing stale"]
    assert messages(checked)["settings"].startswith("would put ")
    diff = next(row["diff"] for row in checked["results"] if row["task"] == "settings")
    assert "-port = 8080\n+port = 9090\n" in diff
    assert (root / "app.conf").read_text() == "port = 8080\nhost = here\n" and (root / "stale").is_dir()


def test_a_command_that_fails_fails_its_host_with_its_output(capsys, project, tmp_path):
    site, inventory, root = project
    (site.parent / "roles" / "app" / "tasks" / "main.yml").write_text(
        "- name: broken\n  command: {argv: [sh, -c, 'echo no such thing >&2; exit 3']}\n")
    code, report, _ = run_playbook_cli(capsys, str(site), "-i", inventory)
    assert code == 2
    (row,) = report["results"]
    assert row["status"] == "failed" and "exited 3" in row["msg"] and "no such thing" in row["msg"]


@pytest.mark.parametrize("task, said", [
    ("command: make install", "tasks/main.yml:2: 'command' takes no shell string: give argv: [program, arg, ...]"),
    ("command: {cmd: make install}", "tasks/main.yml:2: 'command' has no argument 'cmd': give argv:"),
    ("command: {argv: ['A=1', run], chdir: /tmp}", "'command': with chdir, the program (argv's first item) cannot "
                                                    "hold '='"),
    ("command: {argv: make install}", "tasks/main.yml:2: 'command' argument 'argv': argv is a list, not a shell string"),
    ("copy: {src: banner.txt, dest: /tmp/x, mdoe: '0644'}", "tasks/main.yml:2: 'copy' has no argument 'mdoe'; "
                                                            "did you mean mode?"),
    ("copy: {src: baner.txt, dest: /tmp/x}", "tasks/main.yml:2: lookup('file', 'baner.txt'): no such file in "),
    ("copy: {src: baner.txt, dest: /tmp/x}", "/roles/app/files, "),
    ("copy: {src: baner.txt, dest: /tmp/x}", "; did you mean banner.txt?"),
    ("copy: {dest: /tmp/x}", "tasks/main.yml:2: 'copy': give one of src (a file of the role's files/) or content"),
    ("copy: {content: x, dest: tmp/x}", "'copy' argument 'dest': must be an absolute path on the host"),
    ("template: {src: app.conf.j2, dest: /tmp/x, owner: '-rf'}", "'template' argument 'owner': must be a user or "
                                                                "group name"),
    ("template: {src: app.conf.j2, dest: /tmp/x, mode: 'u+x'}", "symbolic modes (u+x) are not supported"),
    ("file: {path: /tmp/x, state: linked}", "'file' argument 'state': Input should be 'file', 'directory', 'absent', "
                                            "'link' or 'touch'"),
    ("file: {path: /tmp/x, state: link}", "'file': src (what the link points to) goes with state: link"),
    ("debug: {msg: hi, var: app_port}", "'debug': give msg or var, not both"),
    ("debug: {var: app_prot}", "tasks/main.yml:2: 'app_prot' is undefined; did you mean app_root, app_port"),
])
def test_a_mistake_in_a_users_task_is_one_line_at_its_file_and_line_before_anything_runs(capsys, project, task, said):
    site, inventory, root = project
    (site.parent / "roles" / "app" / "tasks" / "main.yml").write_text(
        "- name: first\n  " + task + "\n- name: never\n  file: {path: " + str(root) + ", state: directory}\n")
    code = main(["playbook", str(site), "-i", inventory])
    error = capsys.readouterr().err
    assert code == 5 and said in error, error
    assert len(error.strip().splitlines()) == 1
    assert not root.exists()  # nothing ran


def test_syntax_check_reads_a_users_playbook_without_running_it(capsys, project):
    site, inventory, root = project
    assert main(["playbook", str(site), "-i", inventory, "--list-tasks"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in TASK_NAMES) and not root.exists()


def test_the_role_file_is_what_the_docs_show():
    """docs/roles.md's example role is this test's, so the example is known to run."""
    docs = (REPO / "docs" / "roles.md").read_text()
    assert TASKS.strip() in docs
