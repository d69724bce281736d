"""A user's own role (tests/test_user_role_playbook.py: defaults, tasks with copy, template, file, command and
debug, templates/, files/) run by `tritonops playbook` on a lab host over real SSH: first `changed`, then every
task `ok`; `--check` with another value changes nothing; the files, modes, owners and the link are checked on the
host itself; the `command` with `creates` ran once. On the test lab's light host without GPUs, under a folder of
its own."""

import pytest
import yaml

from tests.support.user_role import SECRET, TASK_NAMES, messages, run_playbook_cli, statuses, write_user_role
from tritonops.lab.testing import LIGHT_NOGPU

ROOT = "/srv/tritonops-user-role"
GROUP = "nogroup"  # Debian's: the group is really changed (the SSH user is root)


@pytest.fixture(scope="module")
def project(lab, tmp_path_factory):
    folder = tmp_path_factory.mktemp("user-role")
    site = write_user_role(folder / "project", ROOT, GROUP)
    host = lab.host(LIGHT_NOGPU)
    inventory = folder / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": str(lab.key_file),
                 "tritonops_known_hosts_file": str(lab.known_hosts_file)},
        "hosts": {"app-1": {"ansible_host": host.address, "ansible_port": host.port}}}}))
    return str(site), str(inventory)


@pytest.fixture
def on_host(lab_ssh):
    def run(command: str) -> str:
        return lab_ssh(LIGHT_NOGPU, command, timeout=60).stdout

    run(f"rm -rf {ROOT}")
    yield run
    run(f"rm -rf {ROOT}")


def test_a_users_role_on_a_lab_host_changes_once_then_is_ok_and_check_changes_nothing(capsys, project, on_host):
    site, inventory = project
    code, first, shown = run_playbook_cli(capsys, site, "-i", inventory)
    assert code == 0, messages(first)
    assert statuses(first) == {**dict.fromkeys(TASK_NAMES[:8], "changed"), "nothing stale": "ok", "say where": "ok",
                               "show the key": "ok"}
    assert messages(first)["say where"] == "app-1 serves on 8080" and SECRET not in shown

    listed = on_host(f"cd {ROOT} && stat -c '%n %a %U %G %F' . app.conf banner.txt note ready && readlink current && "
                     "cat app.conf banner.txt note init.log && test -d init.done && test ! -e stale && echo end")
    assert listed.splitlines() == [
        ". 750 root nogroup directory",
        "app.conf 640 root root regular file",
        "banner.txt 644 root nogroup regular file",
        "note 644 root root regular file",
        "ready 600 root root regular empty file",
        "app.conf",
        "port = 8080", "host = app-1",
        "welcome",
        "port 8080",
        "ran",
        "end"]

    code, second, _ = run_playbook_cli(capsys, site, "-i", inventory)
    assert code == 0 and set(statuses(second).values()) == {"ok"}, messages(second)
    assert on_host(f"cat {ROOT}/init.log") == "ran\n"  # creates: the command ran once

    on_host(f"mkdir {ROOT}/stale")
    before = on_host(f"cd {ROOT} && sha256sum app.conf note && stat -c '%n %a %U %G' * | sort")
    code, checked, _ = run_playbook_cli(capsys, site, "-i", inventory, "--check", "--diff", "-e", "app_port=9090")
    assert code == 0 and checked["check"] is True
    assert [task for task, status in statuses(checked).items() if status == "changed"] == \
        ["settings", "inline note", "nothing stale"]
    assert "-port = 8080\n+port = 9090\n" in next(row["diff"] for row in checked["results"] if row["task"] == "settings")
    assert on_host(f"cd {ROOT} && sha256sum app.conf note && stat -c '%n %a %U %G' * | sort") == before
