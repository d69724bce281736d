"""Playbooks and run inputs written for a test: the shipped deploy playbook over an inventory, a one-role play."""

from pathlib import Path


def deploy_inputs(tmp_path: Path, inventory: str, limit: str | None = None):
    """The run inputs of the shipped deploy playbook (its roles too) over `inventory`, YAML text written to
    tmp_path/hosts.yml, as `tritonops deploy -i` reads them; `limit` as --limit."""
    from tritonops.playbook import load_run_inputs
    from tritonops.playbook.shipped import playbook_path, roles_path

    (tmp_path / "hosts.yml").write_text(inventory)
    playbook = str(playbook_path("deploy.yml"))
    return load_run_inputs(playbook, [str(tmp_path / "hosts.yml")], roles_path=roles_path(playbook), limit=limit)


def write_playbook(tmp_path, tasks):
    """tmp_path/play.yml: one play over all hosts with one role, r, whose tasks are `tasks` (YAML text)."""
    roles = tmp_path / "roles" / "r" / "tasks"
    roles.mkdir(parents=True)
    (roles / "main.yml").write_text(tasks)
    (tmp_path / "play.yml").write_text("- name: p\n  hosts: all\n  roles: [r]\n")
    return str(tmp_path / "play.yml")
