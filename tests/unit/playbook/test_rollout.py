"""serial batches and max_fail_percentage on real local hosts: a failed batch stops the rollout."""

from __future__ import annotations

import textwrap

import pytest

from tritonops.playbook import BatchStarted, compile_playbook, load_run_inputs, run_playbook
from tritonops.transport.sessions import SessionPool

INVENTORY = """\
fleet:
  vars:
    ansible_connection: local
  hosts:
    h[1:6]:
"""

PLAYBOOK = """\
- name: rollout
  hosts: fleet
  {settings}
  tasks:
    - name: first
      put_file:
        path: "{{{{ root }}}}/{{{{ 'blocker/' if broken | default(false) else '' }}}}{{{{ inventory_hostname }}}}/one"
        content: "1"
    - name: second
      put_file:
        path: "{{{{ root }}}}/{{{{ inventory_hostname }}}}/two"
        content: "2"

- name: after
  hosts: fleet
  tasks:
    - name: third
      put_file:
        path: "{{{{ root }}}}/{{{{ inventory_hostname }}}}/three"
        content: "3"
"""


def rollout(tmp_path, settings: str, broken: list[str]):
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    (tmp_path / "site.yml").write_text(PLAYBOOK.format(settings=textwrap.indent(settings, "  ").strip()))
    root = tmp_path / "out"
    root.mkdir()
    (root / "blocker").write_text("a regular file: nothing can be put under it")
    inputs = load_run_inputs(str(tmp_path / "site.yml"), [str(tmp_path / "inventory.yml")], extra_vars={"root": str(root)})
    compiled = compile_playbook(inputs, host_facts={host: {"broken": True} for host in broken})
    events = []
    with SessionPool(compiled.connections, forks=6) as pool:
        run = run_playbook(compiled, pool, on_event=events.append)
    return run, [event.hosts for event in events if isinstance(event, BatchStarted)]


def ran(run, task):
    return [result.host for result in run.results if result.task == task and result.status != "failed"]


def test_serial_works_batch_by_batch_and_a_failed_host_drops_out(tmp_path):
    run, batches = rollout(tmp_path, "serial: 2", broken=["h3"])
    assert batches[:3] == [("h1", "h2"), ("h3", "h4"), ("h5", "h6")]
    assert [r.host for r in run.results if r.task == "first"] == ["h1", "h2", "h3", "h4", "h5", "h6"]
    assert ran(run, "second") == ["h1", "h2", "h4", "h5", "h6"]
    assert ran(run, "third") == ["h1", "h2", "h4", "h5", "h6"]  # a failed host sits out later plays too
    assert run.stopped_reason is None and run.plays == ("rollout", "after")
    assert [r.task for r in run.results][:4] == ["first", "first", "second", "second"]  # batch 1 finishes first


def test_a_batch_where_every_host_failed_stops_the_rollout(tmp_path):
    run, batches = rollout(tmp_path, "serial: 2", broken=["h3", "h4"])
    assert batches == [("h1", "h2"), ("h3", "h4")]
    assert "every host of a batch failed" in run.stopped_reason
    assert {r.host for r in run.results} == {"h1", "h2", "h3", "h4"}
    assert not (tmp_path / "out" / "h5").exists() and ran(run, "third") == []


def test_more_failures_than_max_fail_percentage_stop_at_once(tmp_path):
    run, batches = rollout(tmp_path, "serial: 3\nmax_fail_percentage: 30", broken=["h2"])
    assert batches == [("h1", "h2", "h3")]
    assert ran(run, "first") == ["h1", "h3"] and ran(run, "second") == []  # stopped after the failing task
    assert "1 of 3 hosts of a batch failed, more than max_fail_percentage 30%" in run.stopped_reason
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["blocker", "h1", "h3"]
    assert not run.ok


def test_failures_up_to_max_fail_percentage_let_the_rollout_go_on(tmp_path):
    run, batches = rollout(tmp_path, "serial: 2\nmax_fail_percentage: 50", broken=["h3"])
    assert batches[:3] == [("h1", "h2"), ("h3", "h4"), ("h5", "h6")] and run.stopped_reason is None
    assert ran(run, "third") == ["h1", "h2", "h4", "h5", "h6"]


@pytest.mark.parametrize("serial, expected", [
    ("[1, '50%']", [("h1",), ("h2", "h3", "h4"), ("h5", "h6")]),
    ("'34%'", [("h1", "h2"), ("h3", "h4"), ("h5", "h6")]),
])
def test_serial_lists_and_percentages_cut_the_hosts_like_ansible(tmp_path, serial, expected):
    run, batches = rollout(tmp_path, f"serial: {serial}", broken=[])
    assert batches[:len(expected)] == expected and run.ok


def test_after_batch_sees_each_finished_batch_and_its_reason_stops_the_rollout(tmp_path):
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    (tmp_path / "site.yml").write_text(PLAYBOOK.format(settings="serial: 2"))
    root = tmp_path / "out"
    root.mkdir()
    (root / "blocker").write_text("a regular file")
    inputs = load_run_inputs(str(tmp_path / "site.yml"), [str(tmp_path / "inventory.yml")], extra_vars={"root": str(root)})
    compiled = compile_playbook(inputs, host_facts={"h2": {"broken": True}})
    seen = []

    def gate(done):
        seen.append((done.play, done.number, done.of, done.hosts, [(r.host, r.task) for r in done.results]))
        return "the canary was slower" if done.number == 1 else None

    with SessionPool(compiled.connections, forks=6) as pool:
        run = run_playbook(compiled, pool, after_batch=gate)
    # h2 failed its first task: the batch goes on without it, and the hook sees h1 alone still in the run
    assert seen == [("rollout", 1, 3, ("h1",), [("h1", "first"), ("h2", "first"), ("h1", "second")])]
    assert run.stopped_reason == "the canary was slower" and not run.ok
    assert sorted(p.name for p in root.iterdir()) == ["blocker", "h1"]  # no later batch, no later play
    assert run.plays == ("rollout",)
