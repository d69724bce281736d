"""Reading inventories: YAML and INI give the same structure; ranges, INI values, folders, several -i."""

import os
import textwrap
from pathlib import Path

import pytest

from tests.support import paths
from tests.support.inventory import shape
from tritonops.inventory import load_inventory

FIXTURES = paths.FIXTURES / "inventory"


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return str(path)


def load(*paths, **kwargs):
    return load_inventory([str(path) for path in paths], ssh_config_file=os.devnull, **kwargs)


def test_yaml_and_ini_twins_give_the_same_inventory():
    from_yaml = load(FIXTURES / "fleet_yaml" / "hosts.yml")
    from_ini = load(FIXTURES / "fleet_ini" / "hosts.ini")
    assert shape(from_yaml) == shape(from_ini)


def test_yaml_fleet_structure():
    inventory = load(FIXTURES / "fleet_yaml" / "hosts.yml")
    assert [host.name for host in inventory.hosts] == ["bastion", "a100-1", "a100-2", "h200-01", "builder"]
    assert list(inventory.groups) == ["all", "ungrouped", "gpu", "a100", "h200", "build"]
    assert inventory.groups["all"].children == ("ungrouped", "gpu", "build")
    assert inventory.groups["ungrouped"].hosts == ("bastion",)
    assert inventory.groups["gpu"].hosts == ()
    assert inventory.groups["gpu"].children == ("a100", "h200")
    assert inventory.groups["h200"].parents == ("gpu",)
    assert inventory.groups["h200"].depth == 2
    h200 = inventory.host("h200-01")
    assert h200.groups == ("all", "gpu", "h200")
    assert h200.vars == {"tritonops_deployment": "chat", "tritonops_gpu_memory_utilization": 0.9,
                         "ansible_host": "10.0.1.1", "ansible_port": 2222, "tritonops_tensor_parallel_size": 8}
    assert [host.name for host in inventory.hosts_in("gpu")] == ["a100-1", "a100-2", "h200-01"]


def test_ini_values_are_python_literals_and_quotes_keep_strings(tmp_path):
    path = write(tmp_path, "hosts.ini", """
        ; a comment
        [gpu]
        n1 count=3 ratio=0.5 flag=True lower=true quoted="3" spaced='a b' list=[1,2] none=None  # trailing
        n2:2201

        [gpu:vars]
        greeting = hello world   # a comment
        literal="with # hash"
        """)
    inventory = load(path)
    n1 = inventory.host("n1").vars
    assert n1["count"] == 3 and n1["ratio"] == 0.5 and n1["flag"] is True
    assert n1["lower"] == "true"
    assert n1["quoted"] == "3"
    assert n1["spaced"] == "a b"
    assert n1["list"] == [1, 2]
    assert n1["none"] is None
    assert n1["greeting"] == "hello world"
    assert n1["literal"] == "with # hash"
    assert inventory.host("n2").vars["ansible_port"] == 2201
    assert inventory.host("n2").connection.port == 2201


def test_ini_children_declared_after_use_and_all_section(tmp_path):
    path = write(tmp_path, "hosts", """
        [all]
        lonely
        [fleet:children]
        east
        [east]
        e1
        """)
    inventory = load(path)
    assert inventory.host("e1").groups == ("all", "fleet", "east")
    assert inventory.groups["ungrouped"].hosts == ("lonely",)


def test_host_ranges_numbers_letters_and_strides(tmp_path):
    path = write(tmp_path, "hosts.yml", """
        all:
          children:
            racks:
              hosts:
                node[08:11]:
                rack-[a:c]:
                even[0:6:2]:
        """)
    names = [host.name for host in load(path).hosts]
    assert names == ["node08", "node09", "node10", "node11", "rack-a", "rack-b", "rack-c",
                     "even0", "even2", "even4", "even6"]


def test_a_host_in_two_places_is_one_host_and_the_later_host_vars_win(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, "hosts.yml", """
        a:
          hosts:
            shared: {color: red, size: 1}
        b:
          hosts:
            shared: {color: blue}
        """)
    inventory = load(path)
    assert [host.name for host in inventory.hosts] == ["shared"]
    host = inventory.hosts[0]
    assert host.groups == ("all", "a", "b")
    assert host.vars == {"color": "blue", "size": 1}
    assert host.var_source("color") == "inventory hosts.yml:6 (host)"
    assert host.var_source("size") == "inventory hosts.yml:3 (host)"


def test_a_folder_reads_every_inventory_file_in_name_order_and_skips_others(tmp_path):
    write(tmp_path, "10-gpu.yml", "gpu:\n  hosts:\n    g1:\n")
    write(tmp_path, "20-cpu.ini", "[cpu]\nc1\n")
    write(tmp_path, "30-extra", "[extra]\nx1\n")
    write(tmp_path, "README.md", "# not an inventory\n")
    write(tmp_path, "group_vars/gpu.yml", "tritonops_model: m\n")
    inventory = load(tmp_path)
    assert [host.name for host in inventory.hosts] == ["g1", "c1", "x1"]
    assert inventory.host("g1").vars == {"tritonops_model": "m"}
    assert len(inventory.sources) == 3


def test_several_inventories_merge_groups_and_each_reads_its_own_group_vars(tmp_path):
    first = write(tmp_path / "one", "hosts.yml", "gpu:\n  hosts:\n    g1:\n")
    write(tmp_path / "one", "group_vars/gpu.yml", "origin: one\n")
    second = write(tmp_path / "two", "hosts.ini", "[gpu]\ng2\n")
    write(tmp_path / "two", "group_vars/gpu.yml", "origin: two\n")
    inventory = load(first, second)
    assert inventory.groups["gpu"].hosts == ("g1", "g2")
    assert inventory.host("g1").vars["origin"] == "two"  # the later inventory's group_vars win
    assert "two" in inventory.host("g1").var_source("origin")


def test_empty_yaml_inventory_has_no_hosts(tmp_path):
    inventory = load(write(tmp_path, "empty.yml", "# nothing yet\n"))
    assert inventory.hosts == ()
    assert set(inventory.groups) == {"all", "ungrouped"}


def test_extensionless_yaml_is_recognised(tmp_path):
    inventory = load(write(tmp_path, "hosts", "---\nall:\n  hosts:\n    h1:\n      answer: 42\n"))
    assert inventory.host("h1").vars == {"answer": 42}


def test_jinja_looking_values_stay_strings(tmp_path):
    inventory = load(write(tmp_path, "hosts.yml", "all:\n  hosts:\n    h1:\n      url: 'http://{{ ansible_host }}:8000'\n"))
    assert inventory.host("h1").vars["url"] == "http://{{ ansible_host }}:8000"


@pytest.mark.parametrize("text", ["all:\n  hosts:\n    h1:\n", "[all]\nh1\n"])
def test_hosts_under_all_are_ungrouped(tmp_path, text):
    name = "hosts.yml" if text.startswith("all") else "hosts.ini"
    inventory = load(write(tmp_path, name, text))
    assert inventory.host("h1").groups == ("all", "ungrouped")


def test_a_single_path_may_be_given_without_a_list():
    inventory = load_inventory(FIXTURES / "fleet_ini" / "hosts.ini", ssh_config_file=os.devnull)
    assert len(inventory.hosts) == 5
