"""Facts prefetched for a whole batch stand in for per-task reads only until the host changes: a task
after a change reads what is there now, and a run with nothing to change reads each host once."""

from __future__ import annotations

import yaml

from tritonops.playbook import compile_playbook, load_run_inputs, run_playbook
from tritonops.transport.sessions import SessionPool


def run(tmp_path, tasks, *, check=False):
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(
        {"all": {"hosts": {"h1": {"ansible_connection": "local"}}}}))
    (tmp_path / "site.yml").write_text(yaml.safe_dump([{"name": "p", "hosts": "all", "tasks": tasks}]))
    compiled = compile_playbook(load_run_inputs(str(tmp_path / "site.yml"), [str(tmp_path / "inventory.yml")]))
    with SessionPool(compiled.connections) as pool:
        result = run_playbook(compiled, pool, check=check)
        return result, pool.traffic().commands


def test_a_task_after_a_change_sees_the_change_not_the_prefetch(tmp_path):
    target = str(tmp_path / "out" / "a.txt")
    tasks = [{"name": "write", "put_file": {"path": target, "content": "one\n"}},
             {"name": "same again", "put_file": {"path": target, "content": "one\n"}},
             {"name": "folder made by the write", "directory": {"path": str(tmp_path / "out")}}]
    first, _ = run(tmp_path, tasks)
    assert [r.status for r in first.results] == ["changed", "ok", "ok"]


def test_nothing_to_change_reads_the_host_once(tmp_path):
    tasks = [{"name": f"folder {n}", "directory": {"path": str(tmp_path / f"d{n}")}} for n in range(5)]
    run(tmp_path, tasks)
    again, commands = run(tmp_path, tasks)
    assert {r.status for r in again.results} == {"ok"}
    assert commands == 1  # one prefetch round trip for five tasks


def test_check_mode_reads_once_and_reports_every_would_be_change(tmp_path):
    tasks = [{"name": f"folder {n}", "directory": {"path": str(tmp_path / f"c{n}")}} for n in range(3)]
    checked, commands = run(tmp_path, tasks, check=True)
    assert [r.status for r in checked.results] == ["changed"] * 3 and commands == 1
    assert not any((tmp_path / f"c{n}").exists() for n in range(3))
