"""tritonops.api without hosts: `hosts=` given as data is the same inventory a file would be, mistakes raise the
typed error before any host is contacted, `plan` returns the CLI's results, and the CLI never loads fabric."""

import json

import pytest

from tests.support.facts import host_facts
from tests.support.startup import loaded
from tritonops import api
from tritonops.errors import InputError
from tritonops.facts.model import HostProbe, ProbeReport, report_to_json
from tritonops.inventory import inventory_of_hosts, load_inventory
from tritonops.planning import HostDeployPlan

INVENTORY = """all:
  vars:
    ansible_user: ubuntu
    tritonops_model: Qwen/Qwen2.5-7B-Instruct
  hosts:
    gpu1: {ansible_host: 10.0.0.5, ansible_port: 2222, tritonops_deployment: chat}
    gpu2: {ansible_host: 10.0.0.6}
"""
HOSTS = {"gpu1": {"ansible_host": "10.0.0.5", "ansible_port": 2222, "tritonops_deployment": "chat"},
         "gpu2": {"ansible_host": "10.0.0.6"}}
VARS = {"ansible_user": "ubuntu", "tritonops_model": "Qwen/Qwen2.5-7B-Instruct"}


def test_hosts_given_as_data_are_the_inventory_the_same_file_would_be(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(INVENTORY)
    from_file = load_inventory([str(path)], extra_vars={"tritonops_max_num_seqs": 8})
    from_data = inventory_of_hosts(HOSTS, group_vars=VARS, extra_vars={"tritonops_max_num_seqs": 8})
    assert [h.name for h in from_data.hosts] == [h.name for h in from_file.hosts] == ["gpu1", "gpu2"]
    for made, read in zip(from_data.hosts, from_file.hosts):
        assert made.connection == read.connection and made.vars == read.vars
    assert from_data.host("gpu1").connection.label == "ubuntu@10.0.0.5:2222"
    assert from_data.host("gpu1").var_source("tritonops_deployment") == "hosts= (host gpu1)"
    assert from_data.host("gpu2").var_source("tritonops_model") == "hosts= vars"


@pytest.mark.parametrize("given, where, what", [
    (dict(), "hosts", "one of the two"),
    (dict(inventory="x.yml", hosts=["a"]), "hosts", "one of the two"),
    (dict(hosts="gpu1"), "hosts", "not str"),
    (dict(hosts=[]), "hosts", "names no host"),
    (dict(hosts={"gpu1": {"ansible_port": "ssh"}}), "hosts=['gpu1']['ansible_port']", "port"),
    (dict(hosts={"gpu1": {"bad-name": 1}}), "hosts=['gpu1']['bad-name']", "invalid variable name"),
    (dict(hosts={"gpu1": ["not", "vars"]}), "hosts=['gpu1']", "must map to its variables"),
    (dict(hosts=["gpu1"], limit="gpu9"), "--limit", "gpu9"),  # the pattern matcher's words, as for the CLI
])
def test_a_mistake_raises_the_typed_error_naming_where_before_any_host_is_contacted(given, where, what):
    with pytest.raises(InputError) as raised:
        api.probe(**given)
    assert raised.value.where == where and what in raised.value.what


def test_vars_belong_to_hosts_given_as_data_not_to_an_inventory(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text(INVENTORY)
    with pytest.raises(InputError, match="vars= goes with hosts="):
        api.status(inventory=str(path), vars={"tritonops_deployment": "x"})


def saved_probe(*names: str) -> ProbeReport:
    return ProbeReport(hosts=tuple(HostProbe(host=name, status="ok", facts=host_facts(8)) for name in names))


def test_plan_returns_each_hosts_plan_as_the_cli_prints_it(tmp_path, capsys):
    from tritonops.cli.main import main

    results = api.plan(hosts=HOSTS, vars=VARS, facts=saved_probe("gpu1", "gpu2"))
    assert [(r.host, r.status, r.task) for r in results] == [("gpu1", "ok", ""), ("gpu2", "ok", "")]
    assert all(isinstance(r.payload, HostDeployPlan) for r in results)
    assert results["gpu1"].payload.models[0].plan.fits

    inventory, facts = tmp_path / "hosts.yml", tmp_path / "facts.json"
    inventory.write_text(INVENTORY)
    facts.write_text(json.dumps(report_to_json(saved_probe("gpu1", "gpu2"))))
    assert main(["plan", "-i", str(inventory), "--facts", str(facts), "--json"]) == 0
    printed = {row["host"]: row["payload"] for row in json.loads(capsys.readouterr().out)["results"]}
    assert {host: plan["repository"] for host, plan in printed.items()} == \
        {r.host: dict(r.payload.files) for r in results}
    assert printed["gpu1"]["plan"] == results["gpu1"].payload.models[0].plan.to_dict()


def test_plan_names_why_a_host_has_no_plan_from_the_probe():
    results = api.plan(hosts=HOSTS, vars=VARS, facts=saved_probe("gpu1"))  # gpu2 never probed
    assert results["gpu1"].ok and results["gpu2"].status == "failed"
    assert "not in the probe report" in results["gpu2"].msg


def test_the_cli_running_a_command_never_loads_fabric(tmp_path):
    inventory, facts = tmp_path / "hosts.yml", tmp_path / "facts.json"
    inventory.write_text(INVENTORY)
    facts.write_text(json.dumps(report_to_json(saved_probe("gpu1", "gpu2"))))
    code, modules = loaded("plan", "-i", str(inventory), "--facts", str(facts), "--json")
    assert code == 0
    assert "tritonops" in modules and not modules & {"fabric", "invoke"}, sorted(modules)


def test_a_cli_module_importing_fabric_breaks_the_cli_without_fabric_contract(tmp_path):
    from tests.support.import_lint import copy_with, lint

    folder = copy_with(tmp_path, "tritonops/cli/cmd_status.py",
                       "\n\ndef _fabric():\n    from tritonops.transport import fabric_adapter  # noqa: F401\n")
    code, output = lint(folder)
    assert code == 1, output
    assert "the CLI never imports fabric" in output and "BROKEN" in output
    assert "tritonops.cli.cmd_status -> tritonops.transport.fabric_adapter" in output


def test_the_option_types_are_reachable_from_the_api_and_are_the_clis_own():
    from tritonops.deploy.run import DeployOptions
    from tritonops.reading.sessions import ReadOptions
    from tritonops.sizing.engine_plan import SizingRequest

    assert (api.DeployOptions, api.ReadOptions, api.SizingRequest) == (DeployOptions, ReadOptions, SizingRequest)
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        api.Nothing  # noqa: B018
