"""Variable layers: which value wins, and where it came from."""

import os

import pytest

from tests.support.paths import FIXTURES
from tritonops.errors import InputError
from tritonops.inventory import load_inventory
from tritonops.inventory.known_vars import KNOWN_VARS

LAYERED = FIXTURES / "inventory" / "layered"


@pytest.fixture
def layered(monkeypatch):
    monkeypatch.chdir(LAYERED)  # provenance paths are shown relative to the working directory
    return load_inventory(["hosts.yml"], ssh_config_file=os.devnull,
                          defaults={"tritonops_root": "/opt/tritonops", "only_default": 1})


def test_group_vars_all_beats_inventory_all_vars(layered):
    node = layered.host("node01.example.com")
    assert node.vars["tritonops_root"] == "/srv/from-group-vars-all"
    assert node.var_source("tritonops_root") == "group_vars/all.yml:1 (group all)"
    assert [setting.source for setting in node.history["tritonops_root"]] == [
        "role defaults", "inventory hosts.yml:3 (group all)", "group_vars/all.yml:1 (group all)"]


def test_role_defaults_are_the_lowest_layer(layered):
    node = layered.host("node02")
    assert node.vars["only_default"] == 1
    assert node.var_source("only_default") == "role defaults"


def test_group_vars_folder_files_apply_in_name_order(layered):
    node = layered.host("node02")
    assert node.vars["tritonops_model"] == "model-from-second-file"
    assert node.var_source("tritonops_model") == "group_vars/gpu/20-override.yml:1 (group gpu)"


def test_group_vars_files_beat_every_inventory_group_var_even_of_a_child_group(layered):
    # inventory vars of h200 (a child of gpu) < group_vars/gpu: the file layers sit above the inventory
    node = layered.host("node02")
    sources = [setting.source for setting in node.history["tritonops_model"]]
    assert sources == ["inventory hosts.yml:8 (group gpu)", "inventory hosts.yml:14 (group h200)",
                       "group_vars/gpu/10-model.yml:2 (group gpu)", "group_vars/gpu/20-override.yml:1 (group gpu)"]


def test_child_group_beats_parent_within_the_inventory(layered):
    node = layered.host("node02")
    assert node.vars["tritonops_max_model_len"] == 8192
    assert node.var_source("tritonops_max_model_len") == "inventory hosts.yml:15 (group h200)"


def test_group_vars_of_a_child_beat_inventory_vars_of_the_parent(layered):
    node = layered.host("node02")
    assert node.vars["owner"] == "group_vars-h200"
    assert node.var_source("owner") == "group_vars/h200.yaml:1 (group h200)"


def test_inventory_host_vars_beat_group_vars(layered):
    node = layered.host("node01.example.com")
    assert node.vars["tritonops_max_num_seqs"] == 128
    assert node.var_source("tritonops_max_num_seqs") == "inventory hosts.yml:19 (host)"


def test_host_vars_file_without_extension_for_a_dotted_name_beats_inventory_host_vars(layered):
    node = layered.host("node01.example.com")
    assert node.vars["owner"] == "host_vars-node01"
    assert node.var_source("owner") == "host_vars/node01.example.com:1 (host)"


def test_host_vars_folder(layered):
    node = layered.host("node02")
    assert node.vars["tritonops_max_num_seqs"] == 32
    assert node.var_source("tritonops_max_num_seqs") == "host_vars/node02/main.yml:2 (host)"


def test_group_priority_beats_alphabetical_order_among_siblings(layered):
    node = layered.host("node02")
    assert layered.groups["zone_a"].priority == 10
    assert node.vars["zone"] == "a"  # zone_b sorts later by name, but zone_a has the higher priority
    assert node.groups == ("all", "gpu", "zone_b", "zone_a", "h200")


def test_host_groups_include_ancestors_in_precedence_order(layered):
    assert layered.host("node01.example.com").groups == ("all", "gpu", "h200")


def test_group_vars_for_an_unknown_group_are_reported_not_used(layered):
    assert layered.warnings == ("group_vars/retired.yml: no group of that name in the inventory; not used",)
    assert all(host.vars.get("zone") != "retired" for host in layered.hosts)


def test_group_carries_its_own_merged_vars(layered):
    assert layered.groups["gpu"].vars["tritonops_model"] == "model-from-second-file"
    assert layered.groups["gpu"].vars["owner"] == "inventory-gpu"


def test_extra_vars_beat_everything(monkeypatch):
    monkeypatch.chdir(LAYERED)
    inventory = load_inventory(["hosts.yml"], ssh_config_file=os.devnull, extra_vars={"owner": "cli"})
    node = inventory.host("node01.example.com")
    assert node.vars["owner"] == "cli"
    assert node.var_source("owner") == "extra vars (-e)"
    assert node.history["owner"][-2].source == "host_vars/node01.example.com:1 (host)"


def test_unknown_tritonops_variable_names_file_line_and_suggests(tmp_path):
    path = tmp_path / "hosts.yml"
    path.write_text("all:\n  vars:\n    tritonops_modle: x\n")
    with pytest.raises(InputError) as caught:
        load_inventory([str(path)], ssh_config_file=os.devnull)
    assert caught.value.where == f"{path}:3"
    assert "tritonops_modle" in caught.value.what and "did you mean tritonops_model" in caught.value.what


def test_unknown_tritonops_variable_in_group_vars_file(tmp_path):
    (tmp_path / "hosts.yml").write_text("gpu:\n  hosts:\n    g1:\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "gpu.yml").write_text("# sizing\ntritonops_max_model_length: 4096\n")
    with pytest.raises(InputError) as caught:
        load_inventory([str(tmp_path / "hosts.yml")], ssh_config_file=os.devnull)
    assert caught.value.where == f"{tmp_path / 'group_vars' / 'gpu.yml'}:2"
    assert "tritonops_max_model_len" in caught.value.what


def test_unknown_tritonops_variable_in_extra_vars_points_at_dash_e(tmp_path):
    (tmp_path / "hosts.yml").write_text("all:\n  hosts:\n    h1:\n")
    with pytest.raises(InputError) as caught:
        load_inventory([str(tmp_path / "hosts.yml")], ssh_config_file=os.devnull,
                       extra_vars={"tritonops_nonsense": 1})
    assert caught.value.where == "-e"


def test_ansible_and_user_variables_are_free(tmp_path):
    (tmp_path / "hosts.ini").write_text("h1 ansible_become=True my_thing=1 tritonops_model=m\n")
    host = load_inventory([str(tmp_path / "hosts.ini")], ssh_config_file=os.devnull).host("h1")
    assert host.vars == {"ansible_become": True, "my_thing": 1, "tritonops_model": "m"}


def test_registry_has_the_starting_set_with_descriptions():
    for name in ("tritonops_deployment", "tritonops_root", "tritonops_pip_extra_args", "lab_gpu_profile",
                 "lab_kind", "tritonops_triton_image"):
        assert KNOWN_VARS[name].strip()
    assert "/opt/tritonops" in KNOWN_VARS["tritonops_root"]


def test_var_source_of_a_missing_variable_is_a_key_error(layered):
    with pytest.raises(KeyError):
        layered.host("node02").var_source("nope")


def test_role_defaults_put_under_a_loaded_inventory_equal_loading_it_with_them(monkeypatch):
    from tritonops.inventory.model import Setting
    from tritonops.inventory.role_defaults import with_role_defaults

    monkeypatch.chdir(LAYERED)
    defaults = {"tritonops_root": Setting("/opt/tritonops", "roles/r/defaults/main.yml:1 (role r defaults)",
                                          "roles/r/defaults/main.yml:1", str(LAYERED)),
                "only_default": Setting(1, "roles/r/defaults/main.yml:2 (role r defaults)",
                                        "roles/r/defaults/main.yml:2", str(LAYERED))}
    extra = {"tritonops_deployment": "from-e"}
    loaded_with = load_inventory(["hosts.yml"], ssh_config_file=os.devnull, defaults=defaults, extra_vars=extra)
    put_under = with_role_defaults(load_inventory(["hosts.yml"], ssh_config_file=os.devnull, extra_vars=extra),
                                   defaults)
    assert [host.name for host in put_under.hosts] == [host.name for host in loaded_with.hosts]
    for host, expected in zip(put_under.hosts, loaded_with.hosts):
        assert host.vars == expected.vars and list(host.vars) == list(expected.vars)
        assert host.history == expected.history
        assert host.connection == expected.connection and host.groups == expected.groups
    assert put_under.host("node02").var_source("only_default") == "roles/r/defaults/main.yml:2 (role r defaults)"
