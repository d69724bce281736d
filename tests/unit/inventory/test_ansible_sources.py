"""-i sources the built-in reader leaves to ansible-inventory: a script, a plugin, Vault data.

Real ansible-core programs (the test venv's ansible-inventory and ansible-vault), real files, no mocks."""

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.inventory import shape
from tests.support.paths import FIXTURES, REPO
from tritonops.cli.main import main
from tritonops.errors import TritonopsError
from tritonops.inventory import load_inventory
from tritonops.inventory.ansible_run import AnsibleOptions
from tritonops.inventory.ansible_sources import ansible_reason
from tritonops.redact import SecretText

FLEET = FIXTURES / "inventory" / "fleet_yaml" / "hosts.yml"
VENV_BIN = os.path.dirname(sys.executable)
SECRET = "hunter2-correct-horse"

# fleet_yaml/hosts.yml as an inventory script (a CMDB's answer) would give it: Ansible's script format
FLEET_AS_SCRIPT = {
    "all": {"vars": {"tritonops_deployment": "chat"}, "children": ["ungrouped", "gpu", "build"]},
    "ungrouped": {"hosts": ["bastion"]},
    "gpu": {"vars": {"tritonops_gpu_memory_utilization": 0.9}, "children": ["a100", "h200"]},
    "a100": {"hosts": ["a100-1", "a100-2"]},
    "h200": {"hosts": ["h200-01"]},
    "build": {"hosts": ["builder"]},
    "_meta": {"hostvars": {
        "bastion": {"ansible_host": "203.0.113.10"},
        "a100-1": {"ansible_user": "ubuntu"},
        "a100-2": {"ansible_user": "ubuntu"},
        "h200-01": {"ansible_host": "10.0.1.1", "ansible_port": 2222, "tritonops_tensor_parallel_size": 8},
        "builder": {"ansible_connection": "local", "lab_kind": "builder"},
    }},
}


@pytest.fixture(autouse=True)
def ansible_on_path(monkeypatch):
    """ansible-core's programs are found on PATH, as for a user: the test venv's bin first."""
    monkeypatch.setenv("PATH", VENV_BIN + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.delenv("ANSIBLE_VAULT_PASSWORD_FILE", raising=False)
    assert shutil.which("ansible-inventory"), "ansible-core is in the test venv (pyproject's bench extra)"


def load(*paths, **options):
    return load_inventory([str(path) for path in paths], ssh_config_file=os.devnull, ansible=AnsibleOptions(**options))


def write_script(folder: Path, data: dict, name: str = "cmdb.py") -> Path:
    script = folder / name
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, sys
        if "--host" in sys.argv:
            print("{{}}")
        else:
            print(json.dumps({data!r}))
        """))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def vault_files(folder: Path) -> tuple[Path, Path]:
    right, wrong = folder / "vault-pass", folder / "wrong-pass"
    right.write_text("s3cret-vault-pass\n")
    wrong.write_text("not-the-password\n")
    right.chmod(0o600)
    return right, wrong


def encrypt_string(password_file: Path, name: str, value: str) -> str:
    """`name: !vault |...` as ansible-vault encrypt_string writes it."""
    result = subprocess.run(["ansible-vault", "encrypt_string", "--vault-password-file", str(password_file),
                             "--name", name, value], capture_output=True, text=True, check=True)
    return result.stdout


def vaulted_inventory(folder: Path, password_file: Path) -> Path:
    encrypted = textwrap.indent(encrypt_string(password_file, "db_connection", SECRET), " " * 10)
    path = folder / "hosts.yml"
    path.write_text("all:\n  children:\n    gpu:\n      hosts:\n        h1:\n          ansible_host: 10.0.0.7\n"
                    + encrypted + "      vars:\n        tritonops_tensor_parallel_size: 2\n")
    return path


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_script_inventory_reads_into_the_same_inventory_as_its_yaml_twin(tmp_path):
    script = write_script(tmp_path, FLEET_AS_SCRIPT)
    from_script = load(script)
    assert shape(from_script) == shape(load(FLEET))
    h200 = from_script.host("h200-01")
    assert h200.var_source("ansible_port") == f"ansible-inventory:{script} (host)"
    assert from_script.host("a100-1").var_source("tritonops_deployment") == f"ansible-inventory:{script} (group all)"
    assert from_script.sources == (f"ansible-inventory:{script}",)


def test_ansible_inventory_reading_a_plain_yaml_agrees_with_the_built_in_reader():
    assert shape(load(FLEET, always=True)) == shape(load(FLEET))


def test_the_built_in_reader_stays_the_default_for_plain_yaml_and_ini(tmp_path):
    assert ansible_reason(str(FLEET)) is None
    assert ansible_reason(str(FLEET.parent.parent / "fleet_ini" / "hosts.ini")) is None
    plain = tmp_path / "copied.yml"  # executable, as files copied from some disks are, but no #!: not a script
    plain.write_text(FLEET.read_text())
    plain.chmod(0o755)
    assert ansible_reason(str(plain)) is None
    plugin = tmp_path / "aws_ec2.yml"
    plugin.write_text("plugin: amazon.aws.aws_ec2\nregions: [eu-west-1]\n")
    assert ansible_reason(str(plugin)) == "names an inventory plugin"
    assert ansible_reason(str(write_script(tmp_path, {}))) == "is an executable inventory script"


def test_a_vault_value_is_decrypted_with_the_password_file_and_marked_secret(tmp_path):
    right, _ = vault_files(tmp_path)
    inventory = load(vaulted_inventory(tmp_path, right), vault_password_files=(str(right),))
    host = inventory.host("h1")
    assert host.vars["db_connection"] == SECRET
    assert isinstance(host.vars["db_connection"], SecretText)
    assert host.vars["tritonops_tensor_parallel_size"] == 2
    assert host.connection.host == "10.0.0.7"


def test_a_vault_value_never_shows_in_tritonops_inventory(tmp_path, capsys):
    right, _ = vault_files(tmp_path)
    inventory = str(vaulted_inventory(tmp_path, right))
    outputs = []
    for view in (["--host", "h1"], ["--host", "h1", "--json"], ["--json"], ["--graph"], ["--host", "h1", "-vv"]):
        code, out, err = run_cli(capsys, "inventory", "-i", inventory, "--vault-password-file", str(right), *view)
        assert code == 0, err
        outputs.append(out + err)
    assert not any(SECRET in text for text in outputs)
    table = outputs[0]
    assert "db_connection" in table and "(hidden)" in table
    assert "ansible-inventory:" in table and "10.0.0.7" in table
    host_json = json.loads(outputs[1])
    assert "db_connection" not in host_json["vars"] and "db_connection" not in host_json["sources"]
    assert host_json["vars"]["tritonops_tensor_parallel_size"] == 2
    assert "db_connection" not in json.loads(outputs[2])["_meta"]["hostvars"]["h1"]


def test_a_wrong_vault_password_is_a_one_line_error(tmp_path, capsys):
    right, wrong = vault_files(tmp_path)
    inventory = str(vaulted_inventory(tmp_path, right))
    code, out, err = run_cli(capsys, "inventory", "-i", inventory, "--vault-password-file", str(wrong))
    assert code == 5
    assert out == ""
    assert err.count("\n") == 1
    assert "wrong vault password" in err and "host h1 var db_connection" in err
    assert SECRET not in err


def test_a_vault_value_without_a_password_says_which_option_to_pass(tmp_path):
    right, _ = vault_files(tmp_path)
    with pytest.raises(TritonopsError, match="the Vault value of host h1 var db_connection needs a vault password: "
                                             "pass --vault-password-file FILE or --ask-vault-pass"):
        load(vaulted_inventory(tmp_path, right))


def test_an_encrypted_group_vars_file_is_decrypted_its_values_secret_and_a_wrong_password_says_so(tmp_path):
    right, wrong = vault_files(tmp_path)
    (tmp_path / "hosts.yml").write_text("all:\n  children:\n    gpu:\n      hosts:\n        h1:\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("tritonops_deployment: chat\n")
    secret_file = tmp_path / "group_vars" / "gpu.yml"
    secret_file.write_text(f"tritonops_tensor_parallel_size: 4\ncmdb_note: {SECRET}\n")
    subprocess.run(["ansible-vault", "encrypt", "--vault-password-file", str(right), str(secret_file)],
                   capture_output=True, check=True)
    assert ansible_reason(str(tmp_path / "hosts.yml")) == "group_vars/gpu.yml holds Ansible Vault data"
    inventory = load(tmp_path / "hosts.yml", vault_password_files=(str(right),))
    host = inventory.host("h1")
    assert host.vars == {"tritonops_deployment": "chat", "tritonops_tensor_parallel_size": 4, "cmdb_note": SECRET}
    assert isinstance(host.vars["cmdb_note"], SecretText)  # from the encrypted file
    assert not isinstance(host.vars["tritonops_deployment"], SecretText)  # from the plain one
    assert inventory.groups["gpu"].vars == {"tritonops_tensor_parallel_size": 4, "cmdb_note": SECRET}
    with pytest.raises(TritonopsError) as raised:
        load(tmp_path / "hosts.yml", vault_password_files=(str(wrong),))
    assert str(raised.value) == f"ansible-inventory could not read {tmp_path / 'hosts.yml'}: wrong vault password, " \
                                "Decryption failed"


def test_ask_vault_pass_asks_once_and_hands_the_password_over_a_pipe(tmp_path, capsys, monkeypatch):
    right, _ = vault_files(tmp_path)
    inventory = str(vaulted_inventory(tmp_path, right))
    asked = []

    def fake_terminal(prompt="Password: "):  # the person at the terminal, typing the password
        asked.append(prompt)
        return "s3cret-vault-pass"

    monkeypatch.setattr("getpass.getpass", fake_terminal)
    code, out, err = run_cli(capsys, "inventory", "-i", inventory, "-i", str(write_script(tmp_path, {
        "gpu": {"hosts": ["h2"]}, "_meta": {"hostvars": {}}})), "--ask-vault-pass", "--host", "h1")
    assert code == 0, err
    assert asked == ["Vault password: "]  # one prompt for ansible-inventory and ansible-vault, both sources
    assert "(hidden)" in out and SECRET not in out


def test_missing_ansible_inventory_is_a_one_line_error_naming_the_package(tmp_path, capsys, monkeypatch):
    script = write_script(tmp_path, FLEET_AS_SCRIPT)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, out, err = run_cli(capsys, "inventory", "-i", str(script))
    assert code == 5
    assert err == f"error: {script}: reading this inventory needs ansible-core: pip install ansible-core " \
                  "(it provides ansible-inventory)\n"
    # the built-in reader needs no Ansible at all
    assert run_cli(capsys, "inventory", "-i", str(FLEET))[0] == 0


def test_a_failing_script_reports_ansible_s_reason_in_one_line(tmp_path, capsys):
    script = tmp_path / "broken.py"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('cmdb unreachable\\n')\nsys.exit(3)\n")
    script.chmod(0o755)
    code, _, err = run_cli(capsys, "inventory", "-i", str(script))
    assert code == 5 and err.count("\n") == 1
    assert err.startswith(f"error: ansible-inventory could not read {script}: ")
    assert "non-zero exit code 3" in err and "cmdb unreachable" in err


@pytest.mark.parametrize(("data", "message"), [
    ({"gpu": {"hosts": "h1"}, "_meta": {"hostvars": {}}}, "group 'gpu' hosts must be a list of names"),
    ({"gpu": {"hosts": ["h1"], "vars": ["x"]}, "_meta": {"hostvars": {}}}, "group 'gpu' vars must be a mapping"),
    ({"gpu": {"hosts": ["h1"]}, "_meta": {"hostvars": {"h1": {"bad-name": 1}}}},
     "invalid variable name 'bad-name'"),
])
def test_json_that_cannot_be_mapped_names_the_group_or_host(tmp_path, data, message):
    from tritonops.inventory.ansible_list import add_ansible_list
    from tritonops.inventory.draft import InventoryDraft

    with pytest.raises(TritonopsError, match=message) as raised:
        add_ansible_list(data, "cmdb.py", str(tmp_path), InventoryDraft(), {})
    assert "ansible-inventory:cmdb.py" in str(raised.value)


def test_a_vault_value_is_masked_wherever_the_output_quotes_it(tmp_path, capsys):
    right, _ = vault_files(tmp_path)
    user = "svc-deployer-7"
    encrypted = textwrap.indent(encrypt_string(right, "ansible_user", user), " " * 6)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    h1:\n      ansible_host: 10.0.0.7\n" + encrypted)
    for view in ([], ["--json"], ["--host", "h1"]):  # the connection table and JSON show the user, not as a variable
        code, out, err = run_cli(capsys, "inventory", "-i", str(inventory), "--vault-password-file", str(right), *view)
        assert code == 0, err
        assert user not in out + err
        assert "****" in out
    assert load(inventory, vault_password_files=(str(right),)).host("h1").connection.user == user  # still used


def test_an_inventory_plugin_configuration_is_read_by_its_plugin(tmp_path):
    config = tmp_path / "fleet.yml"  # ansible-core's own generator plugin: hosts from layers of names
    config.write_text(textwrap.dedent("""\
        plugin: ansible.builtin.generator
        hosts:
          name: "{{ kind }}-{{ n }}"
          parents:
            - name: "{{ kind }}"
              vars:
                tritonops_tensor_parallel_size: 2
        layers:
          kind: [h200]
          n: ["01", "02"]
        """))
    inventory = load(config)
    assert [host.name for host in inventory.hosts] == ["h200-01", "h200-02"]
    assert inventory.groups["h200"].hosts == ("h200-01", "h200-02")
    host = inventory.host("h200-02")
    assert host.groups == ("all", "h200")
    assert host.vars == {"tritonops_tensor_parallel_size": 2}
    assert host.var_source("tritonops_tensor_parallel_size") == f"ansible-inventory:{config} (group h200)"


def test_a_folder_holding_a_script_beside_yaml_is_read_whole_by_ansible(tmp_path):
    (tmp_path / "static.yml").write_text("all:\n  children:\n    build:\n      hosts:\n        builder:\n")
    write_script(tmp_path, {"gpu": {"hosts": ["g1"]}, "_meta": {"hostvars": {"g1": {"ansible_host": "10.0.0.9"}}}})
    assert ansible_reason(str(tmp_path)) == "cmdb.py is an executable inventory script"
    inventory = load(tmp_path)
    assert {host.name: host.groups for host in inventory.hosts} == {"builder": ("all", "build"),
                                                                     "g1": ("all", "gpu")}
    assert inventory.host("g1").connection.host == "10.0.0.9"


def test_looking_for_what_only_ansible_reads_opens_no_file_twice(monkeypatch):
    """The check that leaves a source to ansible-inventory and the built-in reader share one read of each file
    (a run's inputs are read once: tests/lab/test_deploy_lab.py counts the same for a whole deploy)."""
    import os

    from tritonops.inventory import load_inventory

    example = str(REPO / "inventory" / "example")
    opened: dict[str, int] = {}
    real_open = os.open

    def counting(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.fspath(file).endswith((".yml", ".yaml")):
            opened[os.path.realpath(file)] = opened.get(os.path.realpath(file), 0) + 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    load_inventory([example], ssh_config_file=os.devnull)
    monkeypatch.setattr(os, "open", real_open)
    assert len(opened) >= 7 and set(opened.values()) == {1}, opened
