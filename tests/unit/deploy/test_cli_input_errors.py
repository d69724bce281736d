"""`tritonops deploy` input errors: one line naming the file:line, exit 5, before any host is contacted."""

import json

import pytest
import yaml

from tests.support.playbooks import write_playbook
from tritonops.cli.main import main


@pytest.fixture
def unreachable_inventory(tmp_path):
    # port 1 on loopback: any attempt to contact the host would show as 'unreachable' in the output
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"gpu1": {"ansible_host": "127.0.0.1", "ansible_port": 1}}}}))
    return str(path)


@pytest.mark.parametrize("tasks, problem, line", [
    ("- name: t\n  put_fil: {path: /x, content: y}\n", "did you mean put_file", 2),
    ("- name: t\n  put_file: {path: /x}\n", "content", 2),
    ("- name: t\n  directory: {path: /x}\n  whn: true\n", "whn", 3),
])
def test_playbook_mistakes_stop_the_deploy_before_any_host(capsys, tmp_path, unreachable_inventory, tasks,
                                                           problem, line):
    playbook = write_playbook(tmp_path, tasks)
    code = main(["deploy", "-i", unreachable_inventory, "--playbook", playbook, "--model", "Qwen/Qwen2.5-0.5B-Instruct"])
    captured = capsys.readouterr()
    assert code == 5, captured  # bad input: nothing contacted
    assert captured.err.startswith("error: ") and captured.err.count("\n") == 1
    assert f"main.yml:{line}" in captured.err and problem in captured.err
    assert "unreachable" not in captured.err + captured.out  # no host was contacted


def test_an_undefined_variable_is_found_when_the_tasks_are_rendered_at_its_line(tmp_path, unreachable_inventory):
    """Templates are rendered with each host's facts, so a deploy finds an undefined variable after the
    (read-only) probe, for the hosts it reached (the lab test runs that path end to end); rendering is
    compile_playbook, which names the file:line and the host before anything is written."""
    from tritonops.playbook import PlaybookError, compile_playbook, load_run_inputs

    playbook = write_playbook(tmp_path, "- name: t\n  put_file: {path: '{{ nope }}', content: y}\n")
    with pytest.raises(PlaybookError) as caught:
        compile_playbook(load_run_inputs(playbook, [unreachable_inventory]))
    assert caught.value.where.endswith("main.yml:2") and "nope" in caught.value.what
    assert "host gpu1" in caught.value.what and caught.value.exit_code == 5


def test_a_misspelt_tritonops_variable_in_extra_vars_is_an_error(capsys, unreachable_inventory):
    code = main(["deploy", "-i", unreachable_inventory, "-e", "tritonops_deploymnt=x"])
    err = capsys.readouterr().err
    assert code != 0 and "tritonops_deployment" in err and err.count("\n") == 1


def test_an_unsafe_deployment_name_is_refused_at_its_line(capsys, tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    gpu1:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n"
                    "      tritonops_deployment: ../../etc\n")
    code = main(["deploy", "-i", str(path), "--model", "Qwen/Qwen2.5-0.5B-Instruct"])
    err = capsys.readouterr().err
    assert code != 0 and "hosts.yml:6" in err and "tritonops_deployment" in err


def test_syntax_check_reads_playbook_roles_and_inventory_and_contacts_no_host(capsys, tmp_path,
                                                                              unreachable_inventory):
    playbook = write_playbook(tmp_path, "- name: t\n  directory: {path: /x}\n")
    code = main(["deploy", "-i", unreachable_inventory, "--playbook", playbook, "--syntax-check"])
    captured = capsys.readouterr()
    assert code == 0, captured
    assert captured.out.strip() == f"playbook: {playbook}"
    assert "unreachable" not in captured.err + captured.out


def test_syntax_check_finds_an_unknown_operation_at_its_line(capsys, tmp_path, unreachable_inventory):
    playbook = write_playbook(tmp_path, "- name: t\n  directory: {path: /x}\n- name: u\n  put_fil: {path: /x}\n")
    code = main(["deploy", "-i", unreachable_inventory, "--playbook", playbook, "--syntax-check"])
    err = capsys.readouterr().err
    assert code == 5 and "main.yml:4" in err and "did you mean put_file" in err


def test_list_hosts_shows_each_plays_hosts_within_the_limit(capsys, tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"gpu": {"hosts": {
        "gpu1": {"ansible_host": "127.0.0.1", "ansible_port": 1},
        "gpu2": {"ansible_host": "127.0.0.1", "ansible_port": 1}}}}}}))
    code = main(["deploy", "-i", str(inventory), "--list-hosts", "--limit", "gpu2"])
    out = capsys.readouterr().out
    assert code == 0
    assert "play #1 (all): Triton + vLLM on every GPU host" in out and "hosts (1):" in out
    assert "      gpu2" in out.splitlines() and "gpu1" not in out


def test_list_tasks_shows_the_roles_tasks_after_the_tags(capsys, tmp_path, unreachable_inventory):
    roles = tmp_path / "roles" / "r" / "tasks"
    roles.mkdir(parents=True)
    (roles / "main.yml").write_text("- name: first\n  directory: {path: /x}\n  tags: [a]\n"
                                    "- name: second\n  directory: {path: /y}\n  tags: [b]\n")
    (tmp_path / "play.yml").write_text("- name: p\n  hosts: all\n  roles: [r]\n")
    argv = ["deploy", "-i", unreachable_inventory, "--playbook", str(tmp_path / "play.yml"), "--list-tasks"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "      r : first    TAGS: [a]" in out and "      r : second    TAGS: [b]" in out
    assert main([*argv, "--skip-tags", "a", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [task["name"] for task in listing["plays"][0]["tasks"]] == ["second"]
    assert listing["plays"][0]["hosts"] == ["gpu1"]


def test_rollback_lists_its_playbooks_tasks_too(capsys, unreachable_inventory):
    assert main(["rollback", "-i", unreachable_inventory, "--list-tasks"]) == 0
    out = capsys.readouterr().out
    assert "rollback.yml" in out and "tasks:" in out and "unreachable" not in out


@pytest.mark.parametrize("command", ["deploy", "plan"])
@pytest.mark.parametrize("extra, problem", [
    ("tritonops_frontend=opneai", "did you mean 'openai'"),
    ("tritonops_replicas=two", "tritonops_replicas 'two' is not a whole number >= 1 or 'auto'"),
    ("tritonops_gpus=first", "tritonops_gpus 'first' is not a list of distinct GPU indices"),
    ("tritonops_http_port=80000", "tritonops_http_port"),
    ("tritonops_port_stride=1", "tritonops_port_stride"),
    ("tritonops_max_num_seqs=-1", "tritonops_max_num_seqs"),
])
def test_a_bad_serving_value_in_extra_vars_is_bad_input_before_any_host(capsys, unreachable_inventory, command,
                                                                        extra, problem):
    """The README promises 5 for a bad value; these were found only when the host's plan was made, after the
    probe, and exited 2 (issue #45)."""
    code = main([command, "-i", unreachable_inventory, "--model", "Qwen/Qwen2.5-0.5B-Instruct", "-e", extra])
    captured = capsys.readouterr()
    assert code == 5, captured
    assert captured.err.startswith("error: -e: ") and captured.err.count("\n") == 1 and problem in captured.err
    assert "unreachable" not in captured.err + captured.out and captured.out == ""


def test_a_bad_serving_value_in_the_inventory_is_named_at_its_line_and_host(capsys, tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    gpu1:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n"
                    "    gpu2:\n      ansible_host: 127.0.0.1\n      ansible_port: 1\n      tritonops_replicas: two\n")
    code = main(["deploy", "-i", str(path), "--model", "Qwen/Qwen2.5-0.5B-Instruct"])
    err = capsys.readouterr().err
    assert code == 5 and err.count("\n") == 1
    assert err.startswith(f"error: {path}:9: ") and "tritonops_replicas 'two'" in err and "gpu2" in err
