"""Exit codes are ansible-playbook's (tritonops/exit_codes.py): 0 ok, 2 a host failed, 4 a host
unreachable (before failed), 5 bad input or options, 1 anything else, 99 interrupted."""

import json

import pytest
import yaml

from tests.support.facts import host_facts
from tests.support.network import closed_port
from tritonops.cli.main import main
from tritonops.exit_codes import ExitCode, exit_code_of
from tritonops.facts.model import HostProbe, ProbeReport, report_to_json


def test_the_codes_are_ansible_playbooks():
    assert [int(code) for code in ExitCode] == [0, 1, 2, 4, 5, 99]


@pytest.mark.parametrize("statuses, code", [
    ((), 0),
    (("ok", "changed", "skipped"), 0),
    (("ok", "failed"), 2),
    (("failed", "unreachable", "ok"), 4),  # unreachable wins, as in Ansible's strategy
    (("unreachable",), 4),
])
def test_the_run_code_comes_from_the_hosts_statuses(statuses, code):
    assert exit_code_of(statuses) == code


@pytest.fixture
def inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {
        "good": {"ansible_host": "127.0.0.1", "tritonops_model": "Qwen/Qwen2.5-0.5B-Instruct"},
        "bad": {"ansible_host": "127.0.0.1", "tritonops_model": "Qwen/Qwen2.5-0.5B-Instruct",
                "tritonops_tensor_parallel_size": 2},     # its probe found 1 GPU
        "wrong": {"ansible_host": "127.0.0.1", "tritonops_model": "Qwen/Qwen2.5-0.5B-Instruct",
                  "tritonops_max_num_seqs": -1},          # a bad value, whatever its facts
        "gone": {"ansible_host": "127.0.0.1", "ansible_port": closed_port(),
                 "tritonops_model": "Qwen/Qwen2.5-0.5B-Instruct"}}}}))
    return str(path)


def test_each_command_line_ends_with_the_code_of_what_happened(inventory, tmp_path, capsys):
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(report_to_json(ProbeReport(hosts=(
        HostProbe(host="good", status="ok", facts=host_facts(1)),
        HostProbe(host="bad", status="ok", facts=host_facts(1)),
        HostProbe(host="wrong", status="ok", facts=host_facts(1)),
        HostProbe(host="gone", status="unreachable", msg="connection refused"))))))
    plan = ["plan", "-i", inventory, "--facts", str(facts), "--json"]
    assert main([*plan, "--limit", "good"]) == 0
    assert main([*plan, "--limit", "good:bad"]) == 2          # a host's plan failed
    assert main([*plan, "--limit", "good:wrong"]) == 5        # bad input, found before any host is contacted
    assert main([*plan, "--limit", "!wrong"]) == 4            # a host could not be reached
    assert main(["probe", "-i", inventory, "--limit", "gone"]) == 4
    assert main(["inventory", "-i", inventory, "--host", "nope"]) == 5        # bad input
    assert main(["inventory", "-i", str(tmp_path / "missing.yml"), "--list"]) == 5
    assert main(["plan", "-i", inventory, "--facts", str(facts), "-e", "tritonops_nope=1"]) == 5
    assert main(["size", "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "2080ti"]) == 2  # does not fit
    with pytest.raises(SystemExit) as usage:
        main(["probe", "--no-such-flag"])
    assert usage.value.code == 5                              # a usage mistake is a bad option
    assert main([]) == 5
    capsys.readouterr()
