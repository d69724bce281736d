"""Where roles are found, what a role entry may say, and hosts that cannot be reached."""

from __future__ import annotations

import textwrap

from tritonops.playbook import HostDone, compile_playbook, load_playbook, load_run_inputs, run_playbook
from tritonops.transport.sessions import SessionPool

LOCAL = "all:\n  vars:\n    ansible_connection: local\n  hosts:\n    h1:\n"
MARKER_ROLE = """\
- name: marker from {role}
  put_file:
    path: "{{{{ root }}}}/{role}.txt"
    content: "{{{{ where_from }}}}"
"""


def write(base, files):
    for name, text in files.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def run(tmp_path, playbook, inventory=LOCAL, roles_path=(), **options):
    write(tmp_path, {"site.yml": playbook, "inventory.yml": inventory})
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    inputs = load_run_inputs(str(tmp_path / "site.yml"), [str(tmp_path / "inventory.yml")], roles_path=roles_path,
                             extra_vars={"root": str(out)})
    compiled = compile_playbook(inputs, **options)
    events = []
    with SessionPool(compiled.connections) as pool:
        return run_playbook(compiled, pool, on_event=events.append), events


def test_roles_next_to_the_playbook_come_before_the_roles_path(tmp_path):
    shared = tmp_path / "shared-roles"
    for base, role, label in ((tmp_path / "roles", "app", "next to the playbook"), (shared, "app", "roles path"),
                              (shared, "extra", "roles path")):
        write(base / role, {"tasks/main.yml": MARKER_ROLE.format(role=role),
                            "defaults/main.yml": f"where_from: {label}\n"})
    result, _ = run(tmp_path, "- hosts: all\n  roles: [app, {role: extra}]\n", roles_path=[str(shared)])
    assert result.ok
    assert (tmp_path / "out/app.txt").read_text() == "roles path"  # extra's defaults come later and win
    assert (tmp_path / "out/extra.txt").read_text() == "roles path"
    playbook = load_playbook(str(tmp_path / "site.yml"), roles_path=[str(shared)])
    assert [role.path for role in playbook.plays[0].roles] == [str(tmp_path / "roles/app"), str(shared / "extra")]


def test_a_role_entry_tags_its_tasks(tmp_path):
    write(tmp_path / "roles/app", {"tasks/main.yml": MARKER_ROLE.format(role="app")})
    result, _ = run(tmp_path, "- hosts: all\n  vars: {where_from: x}\n  roles:\n    - {role: app, tags: [app]}\n",
                    skip_tags=["app"])
    assert result.results == () and not (tmp_path / "out/app.txt").exists()


def test_an_unreachable_host_is_reported_and_the_others_go_on(tmp_path):
    inventory = LOCAL + "    dead:\n      ansible_connection: ssh\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n"
    playbook = """\
    - hosts: all
      tasks:
        - name: one
          put_file: {path: "{{ root }}/{{ inventory_hostname }}-1", content: x}
        - name: two
          put_file: {path: "{{ root }}/{{ inventory_hostname }}-2", content: x}
    """
    result, events = run(tmp_path, playbook, inventory=inventory)
    assert [(r.host, r.task, r.status) for r in result.results] == [
        ("h1", "one", "changed"), ("dead", "one", "unreachable"), ("h1", "two", "changed")]
    assert result.recap.host_failed("dead") and result.stopped_reason is None
    assert sorted(e.result.host for e in events if isinstance(e, HostDone)) == ["dead", "h1", "h1"]
