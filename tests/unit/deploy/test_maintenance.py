"""deploy/maintenance (`tritonops stop` / `start`): what is refused before any host is contacted. The stop and
start themselves run on the lab: tests/lab/test_maintenance_lab.py."""

import pytest

from tests.support.playbooks import deploy_inputs
from tritonops.cli.main import main
from tritonops.deploy.maintenance import MaintenanceOptions, maintain
from tritonops.errors import InputError

INVENTORY = """all:
  hosts:
    gpu-1: {ansible_host: 10.0.0.11}
  children:
    tritonops_balancers:
      hosts:
        door-1: {ansible_host: 10.0.0.2, tritonops_deployment: default}
"""


def test_a_negative_replica_an_unknown_action_and_no_serving_host_are_refused_before_any_host(tmp_path):
    with pytest.raises(InputError, match="0 or more") as err:
        maintain(deploy_inputs(tmp_path, INVENTORY), MaintenanceOptions("stop", replica=-1))  # these addresses do not exist
    assert err.value.where == "--replica"
    with pytest.raises(InputError, match="not an action: 'pause'"):
        maintain(deploy_inputs(tmp_path, INVENTORY), MaintenanceOptions("pause"))
    with pytest.raises(InputError, match="no serving host matches door-1") as err:
        maintain(deploy_inputs(tmp_path, INVENTORY, limit="door-1"), MaintenanceOptions("start"))
    assert err.value.where == "--limit"


def test_the_cli_takes_a_whole_replica_index_only(tmp_path, capsys):
    (tmp_path / "hosts.yml").write_text(INVENTORY)
    with pytest.raises(SystemExit) as exited:
        main(["stop", "-i", str(tmp_path / "hosts.yml"), "--replica", "one"])
    assert exited.value.code == 5 and "--replica: invalid int value: 'one'" in capsys.readouterr().err
