"""The lab reached through an inventory script read by the real ansible-inventory, its SSH key's path a Vault value:
`tritonops probe` works unchanged on what ansible-inventory lists."""

import json
import os
import stat
import subprocess
import sys

import pytest

from tritonops.cli.main import main
from tritonops.inventory import load_inventory
from tritonops.lab.testing import FULL_2080TI, LIGHT_H200X2

pytestmark = pytest.mark.lab

VENV_BIN = os.path.dirname(sys.executable)
KEY_VAR = "ansible_ssh_private_key_file"


def own_vars(host) -> dict:
    """The variables written on the host itself in the lab's inventory (not inherited from a group)."""
    return {name: value for name, value in host.vars.items() if host.var_source(name).endswith("(host)")}


def script_inventory_of(lab_inventory, encrypted_key_file: str) -> dict:
    """The lab inventory as an inventory script (a CMDB) would print it, the SSH key's path a `!vault` value."""
    data: dict = {"_meta": {"hostvars": {}}}
    for name, group in lab_inventory.groups.items():
        body = {"hosts": list(group.hosts), "children": list(group.children),
                "vars": {var: value for var, value in group.vars.items() if var != KEY_VAR}}
        data[name] = {key: value for key, value in body.items() if value}
    for host in lab_inventory.hosts:
        data["_meta"]["hostvars"][host.name] = {**own_vars(host), KEY_VAR: {"__ansible_vault": encrypted_key_file}}
    return data


def test_probe_reaches_the_lab_through_a_script_inventory_and_a_vault_key_path(lab, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ["PATH"])  # ansible-core, as a user has it
    monkeypatch.setenv("COLUMNS", "300")  # so rich never shortens a cell under test
    password = tmp_path / "vault-pass"
    password.write_text("lab-vault-pass\n")
    lab_inventory = load_inventory([str(lab.inventory_file)], ssh_config_file=os.devnull)
    key_file = lab_inventory.host(FULL_2080TI).vars[KEY_VAR]
    encrypted = subprocess.run(["ansible-vault", "encrypt", "--vault-password-file", str(password), "--output", "-"],
                               input=key_file, capture_output=True, text=True, check=True).stdout
    script = tmp_path / "cmdb.py"
    script.write_text(f"#!{sys.executable}\nimport json, sys\n"
                      f"print('{{}}' if '--host' in sys.argv else json.dumps({script_inventory_of(lab_inventory, encrypted)!r}))\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)

    code = main(["probe", "-i", str(script), "--vault-password-file", str(password),
                 "--limit", f"{FULL_2080TI}:{LIGHT_H200X2}", "--json"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 0, captured.err
    rows = {row["host"]: row for row in doc["results"]}
    assert list(rows) == [FULL_2080TI, LIGHT_H200X2]
    assert all(row["status"] == "ok" for row in rows.values()), rows

    code = main(["inventory", "-i", str(script), "--vault-password-file", str(password), "--host", FULL_2080TI,
                 "--json"])
    shown = capsys.readouterr().out
    assert code == 0
    host = json.loads(shown)
    assert host["sources"]["ansible_port"] == f"ansible-inventory:{script} (host)"
    assert KEY_VAR not in host["vars"] and host["_connection"]["key_files"] == ["****"]
    assert key_file not in shown  # decrypted, used to reach the host, never shown
