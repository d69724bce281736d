"""`tritonops inventory`: the table, --graph, --host, --json, and where the inventory comes from."""

import json
import shutil

import pytest

from tests.support import paths
from tritonops.cli.main import main

FIXTURES = paths.FIXTURES / "inventory"
FLEET = str(FIXTURES / "fleet_yaml" / "hosts.yml")


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # so rich never shortens a cell under test


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def row(output: str, host: str) -> str:
    return next(line for line in output.splitlines() if f" {host} " in line)


def test_table_lists_every_host_with_its_connection(capsys):
    code, out, _ = run(capsys, "inventory", "-i", FLEET)
    assert code == 0
    assert "5 of 5 hosts" in out
    for host in ("bastion", "a100-1", "a100-2", "h200-01", "builder"):
        assert f" {host} " in out
    h200 = row(out, "h200-01")
    assert "gpu, h200" in h200 and "10.0.1.1" in h200 and "2222" in h200
    assert "ubuntu" in row(out, "a100-2")
    assert "local" in row(out, "builder")
    assert "203.0.113.10" in row(out, "bastion")


def test_limit_narrows_the_table_and_global_options_may_come_first(capsys):
    code, out, _ = run(capsys, "-i", FLEET, "--limit", "gpu:!a100-2", "inventory")
    assert code == 0
    assert "2 of 5 hosts" in out
    assert " a100-1 " in out and " h200-01 " in out
    assert " a100-2 " not in out and " builder " not in out and " bastion " not in out


def test_graph_prints_the_group_tree(capsys):
    code, out, _ = run(capsys, "inventory", "-i", FLEET, "--graph")
    assert code == 0
    assert out.splitlines() == [
        "@all:",
        "  |--@ungrouped:",
        "  |  |--bastion",
        "  |--@gpu:",
        "  |  |--@a100:",
        "  |  |  |--a100-1",
        "  |  |  |--a100-2",
        "  |  |--@h200:",
        "  |  |  |--h200-01",
        "  |--@build:",
        "  |  |--builder",
    ]


def test_graph_under_limit_draws_only_groups_holding_selected_hosts(capsys):
    code, out, _ = run(capsys, "inventory", "-i", FLEET, "--graph", "--limit", "h200")
    assert code == 0
    assert out.splitlines() == ["@all:", "  |--@gpu:", "  |  |--@h200:", "  |  |  |--h200-01"]


def test_json_is_ansible_inventory_list_plus_connection(capsys):
    code, out, _ = run(capsys, "inventory", "-i", FLEET, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["all"] == {"children": ["ungrouped", "gpu", "build"]}
    assert data["gpu"] == {"children": ["a100", "h200"]}
    assert data["a100"] == {"hosts": ["a100-1", "a100-2"]}
    assert data["ungrouped"] == {"hosts": ["bastion"]}
    hostvars = data["_meta"]["hostvars"]
    assert list(hostvars) == ["bastion", "a100-1", "a100-2", "h200-01", "builder"]
    h200 = hostvars["h200-01"]
    assert h200["tritonops_tensor_parallel_size"] == 8
    assert h200["tritonops_gpu_memory_utilization"] == 0.9
    assert h200["_connection"] == {
        "name": "h200-01", "host": "10.0.1.1", "port": 2222, "user": None, "key_files": [],
        "proxy_command": None, "proxy_jump": None, "known_hosts_file": None,
        "strict_host_key_checking": "yes", "connect_timeout_s": 10.0, "local": False, "password_set": False,
        "become_user": None, "become_password_set": False}
    assert hostvars["builder"]["_connection"]["local"] is True


def test_json_with_limit_keeps_only_selected_hosts_and_their_groups(capsys):
    code, out, _ = run(capsys, "inventory", "-i", FLEET, "--json", "--limit", "a100-1")
    data = json.loads(out)
    assert list(data["_meta"]["hostvars"]) == ["a100-1"]
    assert data["all"] == {"children": ["gpu"]}
    assert data["a100"] == {"hosts": ["a100-1"]}
    assert "h200" not in data and "build" not in data


@pytest.fixture
def secret_inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    h1:\n      ansible_password: hunter2\n      ansible_user: ops\n")
    return str(path)


@pytest.mark.parametrize("view", [[], ["--json"], ["--host", "h1"], ["--host", "h1", "--json"], ["--graph"]])
def test_passwords_never_appear(capsys, secret_inventory, view):
    code, out, err = run(capsys, "inventory", "-i", secret_inventory, *view)
    assert code == 0
    assert "hunter2" not in out + err
    assert "h1" in out


def test_json_says_a_password_is_set_without_showing_it(capsys, secret_inventory):
    data = json.loads(run(capsys, "inventory", "-i", secret_inventory, "--json")[1])
    assert data["_meta"]["hostvars"]["h1"]["_connection"]["password_set"] is True
    assert "ansible_password" not in data["_meta"]["hostvars"]["h1"]


def test_host_shows_every_variable_with_its_source(capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES / "layered")
    code, out, _ = run(capsys, "inventory", "-i", "hosts.yml", "--host", "node02")
    assert code == 0
    model = next(line for line in out.splitlines() if "tritonops_model" in line)
    assert "model-from-second-file" in model and "group_vars/gpu/20-override.yml:1 (group gpu)" in model
    zone = next(line for line in out.splitlines() if " zone " in line)
    assert " a " in zone and "inventory hosts.yml:25 (group zone_a)" in zone
    assert "overrides" not in out
    assert "connection: node02;" in out


def test_host_verbose_shows_what_each_value_overrode(capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES / "layered")
    code, out, _ = run(capsys, "inventory", "-i", "hosts.yml", "--host", "node02", "-v")
    assert code == 0
    assert "overrides model-from-inventory-h200" in out
    assert "overrides b" in out


def test_host_json(capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES / "layered")
    data = json.loads(run(capsys, "inventory", "-i", "hosts.yml", "--host", "node01.example.com", "--json")[1])
    assert data["host"] == "node01.example.com"
    assert data["groups"] == ["all", "gpu", "h200"]
    assert data["vars"]["owner"] == "host_vars-node01"
    assert data["sources"]["owner"] == "host_vars/node01.example.com:1 (host)"
    assert data["_connection"]["host"] == "node01.example.com"


def test_unknown_host_is_an_error_with_a_suggestion(capsys):
    code, _, err = run(capsys, "inventory", "-i", FLEET, "--host", "h200-1")
    assert code == 5
    assert "no host named 'h200-1'" in err and "h200-01" in err


def test_warnings_go_to_stderr(capsys, monkeypatch):
    monkeypatch.chdir(FIXTURES / "layered")
    code, out, err = run(capsys, "inventory", "-i", "hosts.yml", "--json")
    assert code == 0
    json.loads(out)  # stdout stays pure JSON
    assert "group_vars/retired.yml: no group of that name" in err


def test_inventory_errors_exit_5_with_file_and_line(capsys, tmp_path):
    bad = tmp_path / "hosts.yml"
    bad.write_text("all:\n  hosts:\n    - h1\n")
    code, out, err = run(capsys, "inventory", "-i", str(bad))
    assert code == 5
    assert f"{bad}:2: 'hosts:' of group 'all' must be a mapping" in err
    assert out == ""


def test_without_dash_i_uses_dot_inventory(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(FIXTURES / "fleet_ini", tmp_path / "inventory")
    code, out, _ = run(capsys, "inventory", "--limit", "build")
    assert code == 0
    assert " builder " in out and "1 of 5 hosts" in out


def test_without_dash_i_and_without_dot_inventory_says_what_to_do(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "inventory")
    assert code == 5
    assert "pass -i PATH" in err


def test_list_and_graph_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        main(["inventory", "-i", FLEET, "--list", "--graph"])


def test_values_are_printed_literally_not_as_rich_markup(capsys, tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  hosts:\n    h1:\n      note: '[bold]kept[/bold]'\n")
    code, out, _ = run(capsys, "inventory", "-i", str(path), "--host", "h1")
    assert code == 0
    assert "[bold]kept[/bold]" in out


def test_extra_vars_show_in_a_hosts_variables_as_from_e(capsys):
    code, out, _ = run(capsys, "inventory", "-i", FLEET, "--host", "h200-01", "-e", "tritonops_max_num_seqs=64",
                       "--json")
    host = json.loads(out)
    assert code == 0
    assert host["vars"]["tritonops_max_num_seqs"] == "64" and host["sources"]["tritonops_max_num_seqs"] == \
        "extra vars (-e)"
