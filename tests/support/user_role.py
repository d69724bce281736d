"""A user's own role (defaults, tasks, templates/, files/) with Ansible's copy, template, file, command and debug,
as the playbook unit test (tests/unit/playbook/test_user_role.py) and the lab test run it, and `tritonops playbook`
run with --json, its document checked against the schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.support.result_schema import SCHEMA
from tritonops.cli.main import main

SECRET = "k-12345-not-for-anyone"

TASKS = """\
- name: app folder
  file: {path: "{{ app_root }}", state: directory, mode: "0750", group: "{{ app_group }}"}
- name: settings
  template: {src: app.conf.j2, dest: "{{ app_root }}/app.conf", mode: "0640"}
- name: banner
  copy: {src: banner.txt, dest: "{{ app_root }}/banner.txt", group: "{{ app_group }}"}
- name: inline note
  copy: {content: "port {{ app_port }}\\n", dest: "{{ app_root }}/note"}
- name: current points at the settings
  file: {path: "{{ app_root }}/current", state: link, src: app.conf}
- name: a marker
  file: {path: "{{ app_root }}/ready", state: touch, mode: "0600"}
- name: nothing stale
  file: {path: "{{ app_root }}/stale", state: absent}
- name: initialise once
  command:
    argv: [sh, -c, 'echo ran >> init.log && mkdir init.done', "{{ app_root }}"]
    chdir: "{{ app_root }}"
    creates: "{{ app_root }}/init.done"
- name: say where
  debug: {msg: "{{ inventory_hostname }} serves on {{ app_port }}"}
- name: show the key
  debug: {var: app_api_key}
"""

TASK_NAMES = ["app folder", "settings", "banner", "inline note", "current points at the settings", "a marker",
              "nothing stale", "initialise once", "say where", "show the key"]


def write_user_role(folder: Path, app_root: str, app_group: str) -> Path:
    """A project of one's own: site.yml and roles/app/ (defaults, tasks, templates/, files/); returns site.yml."""
    role = folder / "roles" / "app"
    for part in ("defaults", "tasks", "templates", "files"):
        (role / part).mkdir(parents=True, exist_ok=True)
    (role / "defaults" / "main.yml").write_text(
        f"app_root: {app_root}\napp_port: 8080\napp_group: {app_group}\napp_api_key: {SECRET}\n")
    (role / "tasks" / "main.yml").write_text(TASKS)
    (role / "templates" / "app.conf.j2").write_text("port = {{ app_port }}\nhost = {{ inventory_hostname }}\n")
    (role / "files" / "banner.txt").write_text("welcome\n")
    site = folder / "site.yml"
    site.write_text("- name: my app\n  hosts: all\n  roles: [app]\n")
    return site


def run_playbook_cli(capsys, *argv) -> tuple[int, dict, str]:
    code = main(["playbook", *argv, "--json"])
    captured = capsys.readouterr()
    found = json.loads(captured.out)
    jsonschema.validate(found, SCHEMA)
    return code, found, captured.out + captured.err


def statuses(report: dict) -> dict[str, str]:
    return {row["task"]: row["status"] for row in report["results"]}


def messages(report: dict) -> dict[str, str]:
    return {row["task"]: row["msg"] for row in report["results"]}
