"""The playbook engine on real local hosts (ansible_connection: local) writing under a tmp folder."""

from __future__ import annotations

import os

import pytest

from tests.support.paths import FIXTURES
from tritonops.playbook import (HostDone, PlayStarted, TaskStarted, compile_playbook, load_playbook,
                                load_run_inputs, run_playbook)
from tritonops.transport.sessions import SessionPool

SITE = FIXTURES / "playbooks" / "site"


def play(root, *, check=False, diff=False, events=None, playbook="site.yml", **options):
    extra = {"root": str(root), **options.pop("extra_vars", {})}
    inputs = load_run_inputs(str(SITE / playbook), [str(SITE / "inventory.yml")], extra_vars=extra,
                             limit=options.pop("limit", None))
    compiled = compile_playbook(inputs, **options)
    with SessionPool(compiled.connections, forks=4) as pool:
        return run_playbook(compiled, pool, check=check, diff=diff, on_event=events.append if events is not None
                            else None)


def statuses(run, task):
    return {result.host: result.status for result in run.results if result.task == task}


def files_under(root):
    return sorted(os.path.relpath(os.path.join(folder, name), root)
                  for folder, dirs, names in os.walk(root) for name in names + dirs)


def test_a_first_run_changes_and_a_second_is_all_ok(tmp_path):
    first = play(tmp_path)
    assert first.ok and first.stopped_reason is None
    assert first.plays == ("web servers", "databases")
    assert statuses(first, "config") == {"h1": "changed", "h2": "changed"}
    assert (tmp_path / "h1/app/config.txt").read_text() == "port=8000\nhost=h1\ngreeting=hello from group all\n"
    assert (tmp_path / "h1/app/config.txt").stat().st_mode & 0o777 == 0o640
    assert os.readlink(tmp_path / "h2/app/current") == "config.txt"
    assert (tmp_path / "h3/db.txt").read_text() == "db\n"

    second = play(tmp_path)
    assert {result.status for result in second.results} == {"ok", "skipped"}
    assert second.recap.to_json()["h2"] == {"ok": 7, "changed": 0, "unreachable": 0, "failed": 0, "skipped": 0}


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """One first run shared by the tests that only read what it did."""
    root = tmp_path_factory.mktemp("first")
    return play(root, extra_vars={"layer_extra": "extra", "run_id": "one"}), root


def test_recap_counts_every_task_result_per_host(first):
    run, _ = first
    # h1: 6 tasks changed + the handler; 'only on h2' skipped; the 'never' task is not run at all
    assert run.recap.to_json() == {
        "h1": {"ok": 0, "changed": 7, "unreachable": 0, "failed": 0, "skipped": 1},
        "h2": {"ok": 0, "changed": 8, "unreachable": 0, "failed": 0, "skipped": 0},
        "h3": {"ok": 0, "changed": 1, "unreachable": 0, "failed": 0, "skipped": 0},
    }
    assert len(run.results) == 17


def test_variable_precedence_role_defaults_group_host_play_extra(first):
    _, tmp_path = first
    # layers.txt is "<default> <group> <host> <play> <extra>": each name set at its own level and all below
    assert (tmp_path / "h1/app/layers.txt").read_text() == "role group host play extra"
    assert (tmp_path / "h2/app/layers.txt").read_text() == "role group group play extra"


def test_role_defaults_keep_their_file_and_line(tmp_path):
    from tritonops.inventory import load_inventory

    playbook = load_playbook(str(SITE / "site.yml"))
    defaults = playbook.plays[0].defaults
    assert defaults["app_port"].where.endswith("roles/app/defaults/main.yml:7")
    host = load_inventory([str(SITE / "inventory.yml")], defaults=defaults).host("h2")
    assert host.setting("app_port").where.endswith("roles/app/defaults/main.yml:7")
    assert host.setting("layer_group").where.endswith("inventory.yml:8")
    assert [s.where.rsplit("/", 1)[-1] for s in host.history["layer_group"]] == ["main.yml:2", "inventory.yml:8"]


def test_host_facts_from_the_caller_are_variables_above_inventory_below_play_vars(tmp_path):
    run = play(tmp_path, host_facts={"h1": {"app_port": 9001, "layer_play": "fact", "greeting": "{{ not_rendered }}"}})
    assert run.ok
    config = (tmp_path / "h1/app/config.txt").read_text()
    assert "port=9001\n" in config and "greeting={{ not_rendered }}" in config  # facts are data
    assert (tmp_path / "h1/app/layers.txt").read_text().split()[3] == "play"
    assert "port=8000" in (tmp_path / "h2/app/config.txt").read_text()


def test_when_false_is_skipped_and_touches_nothing(first):
    run, tmp_path = first
    assert statuses(run, "only on h2") == {"h1": "skipped", "h2": "changed"}
    assert not (tmp_path / "h1/app/h2-only.txt").exists()
    assert (tmp_path / "h2/app/h2-only.txt").exists()


def test_loop_runs_the_operation_per_item_in_one_result(first):
    run, tmp_path = first
    assert statuses(run, "one file per item") == {"h1": "changed", "h2": "changed"}
    assert (tmp_path / "h1/app/a.txt").read_text() == "a\n" and (tmp_path / "h1/app/b.txt").read_text() == "b\n"


def test_tags_select_tasks_and_inherit_from_the_play(tmp_path):
    run = play(tmp_path, tags=["config", "marker"])
    assert {result.task for result in run.results} == {"config", "play marker", "restart app"}


def test_skip_tags_and_never(tmp_path):
    run = play(tmp_path, skip_tags=["config", "link"])
    tasks = {result.task for result in run.results}
    assert "app folder" in tasks and "config" not in tasks and "current link" not in tasks and "debug dump" not in tasks
    assert not (tmp_path / "h1/app/debug.txt").exists()
    asked = play(tmp_path, tags=["debug"])
    assert {result.task for result in asked.results} == {"debug dump"}
    assert (tmp_path / "h1/app/debug.txt").exists()


def test_handlers_run_once_per_host_at_the_end_and_only_after_a_change(tmp_path):
    run = play(tmp_path, extra_vars={"run_id": "one"})
    handler_runs = [result for result in run.results if result.task == "restart app"]
    assert [result.host for result in handler_runs] == ["h1", "h2"]  # notified by two tasks, run once
    web = [result.task for result in run.results if result.host == "h1"]
    assert web[-1] == "restart app"  # after every task of the play
    assert (tmp_path / "h1/app/restarted.txt").read_text() == "one\n"

    again = play(tmp_path, extra_vars={"run_id": "two"})
    assert "restart app" not in {result.task for result in again.results}
    assert (tmp_path / "h1/app/restarted.txt").read_text() == "one\n"

    (tmp_path / "h2/app/config.txt").write_text("edited by hand\n")
    third = play(tmp_path, extra_vars={"run_id": "three"})
    assert statuses(third, "restart app") == {"h2": "changed"}
    assert (tmp_path / "h2/app/restarted.txt").read_text() == "three\n"
    assert (tmp_path / "h1/app/restarted.txt").read_text() == "one\n"


def test_check_mode_changes_nothing_yet_reports_what_would_change(tmp_path):
    run = play(tmp_path, check=True)
    assert files_under(tmp_path) == []
    assert statuses(run, "config") == {"h1": "changed", "h2": "changed"}
    assert run.results[0].msg.startswith("would mkdir")
    assert statuses(run, "restart app") == {"h1": "changed", "h2": "changed"}  # handlers report too


def test_diff_shows_the_file_change(tmp_path):
    play(tmp_path)
    (tmp_path / "h1/app/config.txt").write_text("port=1\nhost=h1\ngreeting=hello from group all\n")
    run = play(tmp_path, diff=True, check=True)
    config = next(r for r in run.results if r.task == "config" and r.host == "h1")
    assert config.status == "changed"
    path = str(tmp_path / "h1/app/config.txt")
    assert config.diff.splitlines()[:6] == [f"--- {path}", f"+++ {path}", "@@ -1,3 +1,3 @@", "-port=1", "+port=8000",
                                            " host=h1"]
    assert (tmp_path / "h1/app/config.txt").read_text().startswith("port=1\n")  # check: still not written
    unchanged = next(r for r in run.results if r.task == "layers" and r.host == "h1")
    assert unchanged.status == "ok" and unchanged.diff is None


def test_diff_of_a_new_file_is_against_dev_null(tmp_path):
    run = play(tmp_path, diff=True, tags=["marker"])
    marker = next(r for r in run.results if r.host == "h2")
    assert marker.diff == f"--- /dev/null\n+++ {tmp_path}/h2/app/play.txt\n@@ -0,0 +1 @@\n+h2 in web\n"


def test_limit_narrows_every_play(tmp_path):
    run = play(tmp_path, limit="h2")
    assert {result.host for result in run.results} == {"h2"}
    assert run.plays == ("web servers",)
    assert not (tmp_path / "h1").exists() and not (tmp_path / "h3").exists()


def test_events_tell_a_live_display_about_plays_tasks_and_each_host(tmp_path):
    events = []
    run = play(tmp_path, events=events, tags=["marker"])
    kinds = [type(event).__name__ for event in events]
    assert kinds == ["PlayStarted", "BatchStarted", "TaskStarted", "HostDone", "HostDone", "BatchDone", "PlayStarted"]
    assert isinstance(events[0], PlayStarted) and events[0].hosts == ("h1", "h2")
    assert isinstance(events[2], TaskStarted) and events[2].task == "play marker"
    done = sorted(event.result.host for event in events if isinstance(event, HostDone))
    assert done == ["h1", "h2"] and len(run.results) == 2


@pytest.mark.parametrize("forks", [1, 3])
def test_a_failing_host_stops_getting_tasks_while_the_others_go_on(tmp_path, forks):
    (tmp_path / "h1").write_text("a regular file where h1's folder should be")
    compiled = compile_playbook(load_run_inputs(str(SITE / "site.yml"), [str(SITE / "inventory.yml")],
                                                extra_vars={"root": str(tmp_path)}))
    with SessionPool(compiled.connections, forks=forks) as pool:
        run = run_playbook(compiled, pool)
    assert statuses(run, "app folder") == {"h1": "failed", "h2": "changed"}
    assert "mkdir" in run.results[0].msg
    assert {result.host for result in run.results if result.task != "app folder"} == {"h2", "h3"}
    assert run.stopped_reason is None and not run.ok
    assert run.recap.host_failed("h1") and not run.recap.host_failed("h2")


def test_handlers_run_after_every_task_of_the_play(first):
    run, tmp_path = first
    h1 = [result.task for result in run.results if result.host == "h1"]
    assert h1[-1] == "restart app" and h1.count("restart app") == 1
    assert (tmp_path / "h1/app/restarted.txt").read_text() == "one\n"


# --- --start-at-task and --step (issue #45 item 7) --------------------------------------------------------------

def tasks_run(run) -> list[str]:
    return list(dict.fromkeys(result.task for result in run.results))


def test_start_at_task_leaves_out_the_tasks_before_the_first_it_names_across_plays(tmp_path):
    run = play(tmp_path, start_at_task="play marker")
    assert run.ok and tasks_run(run) == ["play marker", "db marker"]  # the role's tasks before it are not run
    assert not (tmp_path / "h1" / "app" / "config.txt").exists() and (tmp_path / "h3" / "db.txt").exists()
    # a glob, against the name or "role : name"
    assert tasks_run(play(tmp_path / "b", start_at_task="app : current*"))[0] == "current link"
    from tritonops.errors import InputError
    with pytest.raises(InputError, match=r"^--start-at-task: no task of .*site.yml is named 'no such task'$"):
        play(tmp_path, start_at_task="no such task")


def test_step_asks_before_each_task_no_skips_it_continue_stops_asking(tmp_path):
    from argparse import Namespace

    from tritonops.cli.cmd_deploy import step_options

    asked, answers = [], iter(["", "maybe", "y", "c"])  # no (the default), a word it does not take, yes, continue

    def ask(question: str) -> str:
        asked.append(question)
        return next(answers)

    confirm = step_options(Namespace(step=True, start_at_task=None), ask=ask)["step"]
    inputs = load_run_inputs(str(SITE / "site.yml"), [str(SITE / "inventory.yml")], extra_vars={"root": str(tmp_path)})
    compiled = compile_playbook(inputs)
    with SessionPool(compiled.connections, forks=4) as pool:
        run = run_playbook(compiled, pool, confirm=confirm)
    assert asked[:3] == ["Perform task: app folder (N)o/(y)es/(c)ontinue: ",
                         "Perform task: config (N)o/(y)es/(c)ontinue: ",
                         "Perform task: config (N)o/(y)es/(c)ontinue: "]
    assert len(asked) == 4  # "c" on the third task: the rest run unasked
    assert "app folder" not in tasks_run(run) and tasks_run(run)[:2] == ["config", "layers"]
