"""Every command that prints a table prints it from its typed results (issue #41: `stop` and `start` printed their
replicas, then died on `results[0]` of a GroupResult, exit 1, while `--json` worked). Each table function is given
the results its command makes (payloads of their real types, rows without a payload, balancers' rows) and read at
120 columns, what a person's terminal shows; the commands that need no host run from the command line in table
mode. `tritonops releases`, `prune`, `lock status`, `inventory` and `probe` print their tables in their own test files
(test_release_listing, test_prune_cli, test_lock_admin, test_inventory_cli, test_exit_codes)."""

import io
import json
from datetime import datetime, timezone

import pytest
import yaml
from rich.console import Console

from tests.support.paths import FIXTURES
from tests.support.serve_records import serve_record
from tritonops.planning.serve_record import ReplicaRecord
from tritonops.cli.main import main
from tritonops.results import GroupResult, HostResult

NOW = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
RELEASE = "20261201T080000Z-aaaa1111"
METRICS = ('nv_inference_request_success{model="chat",version="1"} 3\n'
           'nv_inference_request_duration_us{model="chat",version="1"} 3000000\n')
STAT = (FIXTURES / "haproxy" / "door_show_stat.txt").read_text()


def shown(renderable, width: int = 120) -> str:
    """What a terminal `width` columns wide shows; every line of the table ends in its border (nothing cut)."""
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    text = out.getvalue()
    assert all(len(row) <= width for row in text.splitlines()), text
    return text


def table_lines(text: str) -> list[str]:
    return [row for row in text.splitlines() if row.startswith(("│", "┃"))]


# --- status ----------------------------------------------------------------------------------------------------

def _host(name: str, container: dict, health: dict, replicas=()):
    from tritonops.reading.status import host_said
    from tritonops.serving.releases import Deployed, ReleaseRecord
    from tritonops.serving.status import host_status

    release = ReleaseRecord(RELEASE, "20261201T080000Z", "sha256:x", serve_record(models=["chat"]), ("chat",),
                            ({"passed": True, "kv_cache_tokens": {"predicted": 1000, "reported": 1040}},))
    found = host_status(name, Deployed((release,), RELEASE, container), health, NOW, replicas=replicas)
    return HostResult(name, "ok" if found.ok else "failed", host_said(found, None), found, task="status")


READY = {"live": True, "ready": True, "models": {"chat": True}, "metrics": METRICS}
RUNNING = {"status": "running", "running": True, "restarts": 0, "started_at": "2026-12-01T08:00:00Z",
           "restart": "unless-stopped", "release": RELEASE, "log_driver": "json-file"}
STOPPED = {"status": "exited", "running": False, "restarts": 0, "restart": "unless-stopped", "release": RELEASE}


def _replica(index: int, state: str, health: dict):
    from tritonops.serving.status import replica_status

    return replica_status(ReplicaRecord(index=index, gpus=(index,), ports=(8000 + 10 * index, 8001 + 10 * index,
                                                                          8002 + 10 * index)), state, health)


def _with_prefix_cache(queries: int, hits: int) -> dict:
    return dict(READY, metrics=METRICS + f'vllm:prefix_cache_queries_total{{model="chat",version="1"}} {queries}\n'
                                         f'vllm:prefix_cache_hits_total{{model="chat",version="1"}} {hits}\n')


def test_status_shows_the_prefix_caches_hit_rate_per_host_and_per_replica():
    """Issue #44: the share of prompt tokens each replica's vLLM found in its prefix cache (the backend's
    vllm:prefix_cache_* counters), the host's from its metrics page; '-' where no engine reports them."""
    from tritonops.cli.cmd_status import _tables

    results = GroupResult.of([
        _host("gpu1", RUNNING, _with_prefix_cache(1000, 620),
              (_replica(0, "running", _with_prefix_cache(1000, 700)), _replica(1, "running", _with_prefix_cache(
                  2000, 1100)))),
        _host("gpu2", RUNNING, READY),
    ])
    rows = table_lines(shown(_tables(results)))[1:]
    last = [row.rstrip("│ ").rsplit("│", 1)[1].strip() for row in rows]  # the last column, a row a line
    first, second = next(i for i, row in enumerate(rows) if "gpu1" in row), next(i for i, row in enumerate(rows)
                                                                               if "gpu2" in row)
    assert " ".join(last[first:second]) == "62% hits (r0 70%, r1 55%)" and last[second] == "-", rows


def test_status_shows_a_stopped_replica_as_stopped_beside_the_one_that_serves_and_says_what_starts_it():
    from tritonops.door.servers import door_status
    from tritonops.door.runtime import parse_stat
    from tritonops.cli.cmd_status import _tables

    results = GroupResult.of([
        _host("gpu1", RUNNING, READY, (_replica(0, "running", READY), _replica(1, "stopped", {}))),
        _host("gpu2", STOPPED, {}),
        _host("gpu3", RUNNING, READY, (_replica(0, "running", READY), _replica(1, "restarting", {}))),
        HostResult("gpu4", "unreachable", "ssh: connection refused", task="status"),
        HostResult("door-1", "ok", "chat: 1/1 replicas UP", door_status(parse_stat(STAT)), task="door"),
    ])
    text = shown(_tables(results))
    rows = table_lines(text)
    header = rows[0]
    # compact by default (issue #45 item 2): the release whole, to paste into rollback --to; no container column
    assert [c.strip() for c in header.strip("┃").split("┃")] == [
        "host", "status", "release", "replicas", "model", "KV plan / vLLM", "requests", "prefix cache"], header
    gpu1 = next(row for row in rows if "gpu1" in row)
    assert "│ ok " in gpu1 and f" {RELEASE} " in gpu1 and "running" not in gpu1 and "1/2 ready," in gpu1
    verbose = shown(_tables(results, verbose=True))  # -v: and each host's container, and its models' times
    details = table_lines(verbose.split("CONTAINERS", 1)[1])
    assert [c.strip() for c in details[0].strip("┃").split("┃")] == [
        "host", "container", "up", "restarts", "logs", "model", "ms request", "ms queue", "ms infer"]
    assert [c.strip() for c in next(row for row in details if "gpu1" in row).strip("│").split("│")] == [
        "gpu1", "running", "60 min", "0", "json-file", "chat", "1,000.0", "-", "-"]
    assert "│ stopped " in next(row for row in details if "gpu2" in row)
    assert "gpu1 ok: serving: 1 of 2 replicas ready; replica 1 stopped (tritonops stop or docker stop): " \
           "`tritonops start --limit gpu1` starts it again" in text.replace("\n", " ").replace("  ", " ")
    gpu2 = next(row for row in rows if "gpu2" in row)
    assert "│ ok " in gpu2 and gpu2.count("stopped") == 1  # the replicas column
    assert "gpu2 ok: stopped (tritonops stop or docker stop): `tritonops start --limit gpu2` starts it again" in text
    gpu3 = next(row for row in rows if "gpu3" in row)
    assert "│ failed " in gpu3  # a crashed replica still fails the host
    assert "gpu3 failed: replica 1 (GPU 1): container restarting, ready False" in text
    assert "│ unreachable " in next(row for row in rows if "gpu4" in row) and "gpu4 unreachable: ssh: connection refused" in text
    assert "DOOR (HAProxy on each balancer)" in text and "door-1" in text


def test_status_of_a_host_with_one_container_reads_its_health_and_a_model_not_ready_says_so():
    from tritonops.cli.cmd_status import _tables

    loading = {"live": True, "ready": False, "models": {"chat": False}, "metrics": ""}
    text = shown(_tables(GroupResult.of([_host("gpu1", RUNNING, READY), _host("gpu2", RUNNING, loading)])))
    rows = table_lines(text)
    assert "│ ready " in next(row for row in rows if "gpu1" in row)
    gpu2 = next(row for row in rows if "gpu2" in row)
    assert "│ failed " in gpu2 and "│ live " in gpu2 and "chat (not" in gpu2
    assert "gpu2 failed: container running, ready False" in text and "gpu1 ok" not in text  # a host that serves says nothing


# --- stop / start ------------------------------------------------------------------------------------------------

def test_stop_and_start_tables_show_each_replica_before_and_after_and_what_each_host_said():
    from tritonops.cli.maintenance_command import maintenance_table
    from tritonops.deploy.maintenance import Maintained, ReplicaChange

    results = GroupResult.of([  # a GroupResult: `results[0]` is a KeyError there, the bug this pins down
        HostResult("gpu1", "changed", f"stopped replica 2 (tritonops-chat-2) of release {RELEASE}; drained on door-1",
                   Maintained(RELEASE, (ReplicaChange(2, "tritonops-chat-2", "running", "exited"),)), task="stop"),
        HostResult("gpu2", "ok", "replica 0 already exited, replica 1 already exited",
                   Maintained(RELEASE, (ReplicaChange(0, "tritonops-chat", "exited", "exited"),
                                        ReplicaChange(1, "tritonops-chat-1", "exited", "exited"))), task="stop"),
        HostResult("gpu3", "failed", "locked by carol@ctl (pid 4242, deploy since 2026-12-01T08:00:00Z)", task="lock"),
    ])
    text = shown(maintenance_table(results, "stop", False))
    rows = table_lines(text)
    assert text.splitlines()[0].strip() == "STOP"
    assert [row.split("│")[1:7] for row in rows[1:]] == [
        [" gpu1 ", " changed ", f" {RELEASE} ", " 2       ", " tritonops-chat-2 ", " running -> exited "],
        [" gpu2 ", " ok      ", f" {RELEASE} ", " 0       ", " tritonops-chat   ", " exited            "],
        ["      ", "         ", "                           ", " 1       ", " tritonops-chat-1 ", " exited            "],
        [" gpu3 ", " failed  ", " -                         ", "         ", "                  ", "                   "]]
    assert f"gpu1 changed: stopped replica 2 (tritonops-chat-2) of release {RELEASE}; drained on door-1" in text
    assert "gpu3 failed: locked by carol@ctl" in text
    checked = shown(maintenance_table(GroupResult.of([HostResult(
        "gpu2", "changed", f"would have started replica 0 (tritonops-chat) of release {RELEASE}",
        Maintained(RELEASE, (ReplicaChange(0, "tritonops-chat", "exited", "running"),)), task="start")]), "start", True))
    assert checked.splitlines()[0].strip() == "START (check: nothing was changed)" and "exited -> running" in checked


@pytest.fixture
def deployed_here(tmp_path):
    """This machine as a host (ansible_connection local) with dep-x's release of two replicas in tmp_path, and no
    container of it (this machine's Docker engine is shared: only --check runs here; the lab stops for real)."""
    folder = tmp_path / "opt" / "dep-x"
    release = folder / "releases" / RELEASE
    release.mkdir(parents=True)
    serve = {"models": ["chat"], "gpus": [0, 1], "weights_dirs": ["/opt/w"], "deadline_s": 300, "kv_cache_tokens": 10,
             "replicas": [{"index": 0, "gpus": [0], "ports": [28000, 28001, 28002]},
                          {"index": 1, "gpus": [1], "ports": [28010, 28011, 28012]}]}
    (release / "release.json").write_text(json.dumps({"id": RELEASE, "image_id": "sha256:" + "a" * 64, "serve": serve,
                                                      "gates": [{"passed": True}]}))
    (folder / "current").symlink_to(f"releases/{RELEASE}")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"here": {
        "ansible_connection": "local", "tritonops_root": str(tmp_path / "opt"), "tritonops_deployment": "dep-x"}}}}))
    return str(inventory)


def test_stop_and_start_print_their_table_from_the_command_line(capsys, deployed_here):
    code = main(["stop", "-i", deployed_here, "--check", "--replica", "1", "--audit-log", "none"])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("STOP (check: nothing was changed)"), out
    assert "absent" in out and "tritonops-dep-x-1" in out and "here ok: replica 1 already absent" in out

    code = main(["start", "-i", deployed_here, "--check", "--audit-log", "none"])
    out = capsys.readouterr().out
    assert code == 2 and out.startswith("START (check: nothing was changed)"), out  # a host failed: Ansible's 2
    assert "here failed: replica 0: no container tritonops-dep-x on the host: `tritonops deploy` makes it" in out


# --- metrics, door keys, lock release ----------------------------------------------------------------------------

def test_metrics_prints_each_host_s_models_and_each_door_s_figures():
    from tritonops.door.figures import door_figures
    from tritonops.door.runtime import parse_stat
    from tritonops.cli.cmd_metrics import _tables
    from tritonops.metrics.figures import host_figures

    results = GroupResult.of([
        HostResult("gpu1", "ok", "1 model(s), 3 requests", host_figures(METRICS), task="metrics"),
        HostResult("gpu2", "failed", "port 8002 is closed", task="metrics"),
        HostResult("door-1", "ok", "chat", door_figures(parse_stat(STAT)), task="door"),
    ])
    text = shown(_tables(results))
    assert "METRICS (average ms per request)" in text and "DOOR (HAProxy on each balancer" in text
    gpu1 = next(row for row in table_lines(text) if "gpu1" in row)
    assert "chat" in gpu1 and "3 / 0" in gpu1
    assert "│ failed " in next(row for row in table_lines(text) if "gpu2" in row)
    assert "gpu2 failed: port 8002 is closed" in text


def test_door_keys_print_their_table_from_the_command_line(capsys, tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"tritonops_balancers": {"hosts": {
        "door-1": {"ansible_host": "10.0.0.2"}}}}}}))  # no keys file: refused before the balancer is contacted
    code = main(["door", "rotate-key", "-i", str(path), "--check", "--audit-log", "none"])
    out = capsys.readouterr().out
    assert code == 2 and "DOOR KEYS" in out and "door-1" in out and "no tritonops_api_keys_file" in out


def test_lock_release_prints_its_table_from_the_command_line(capsys, tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"here": {
        "ansible_connection": "local", "tritonops_root": str(tmp_path / "opt"), "tritonops_deployment": "dep-x"}}}}))
    code = main(["lock", "release", "-i", str(path), "--force", "dave@ctl", "--audit-log", "none"])
    out = capsys.readouterr().out
    assert code == 0 and "LOCK RELEASE" in out and "not locked: nothing to release" in out


# --- -v and -vv (issue #45 item 3) --------------------------------------------------------------------------------

def test_minus_v_in_check_mode_says_each_step_the_task_would_carry_out():
    from tritonops.cli.cmd_deploy import _Progress
    from tritonops.cli.output import Output
    from tritonops.playbook.events import HostDone
    from tritonops.playbook.host_task import TaskOutcome

    def progress(verbosity: int) -> str:
        err = io.StringIO()
        done = HostResult("gpu1", "changed", "would start tritonops-chat", TaskOutcome(
            "serve_release", steps=("start tritonops-chat on release r2 (GPUs [0]) and gate it",), check=True),
            task="serve")
        _Progress(Output(verbosity=verbosity, file=io.StringIO(), err_file=err))(HostDone("deploy", done))
        return err.getvalue()

    assert "would start tritonops-chat on release r2 (GPUs [0]) and gate it" in progress(1)
    assert "on release r2" not in progress(0)


def test_minus_vv_shows_a_host_programs_json_answer_a_field_a_line():
    from tritonops.cli.cmd_deploy import output_lines

    answer = json.dumps({"status": "switched", "release": "r2", "replicas": [{"name": None, "log": ["x" * 300] * 40}]})
    assert len(answer) > 4000  # what -vv printed as one line
    shown = output_lines(answer)
    assert shown[0] == "{" and '  "status": "switched",' in shown and len(shown) > 40
    assert all(len(row) <= 200 for row in shown) and any(row.endswith("…") for row in shown)
    assert output_lines("line one\nline two\n") == ["line one", "line two"]
