"""Host patterns (--limit, a play's hosts:): each form, Ansible's order of operations, errors."""

import os
import textwrap

import time

import pytest

from tritonops.errors import InputError
from tritonops.inventory import load_inventory

INVENTORY = """
[web]
web1
web2
web10

[db]
db1
web2

[gpu:children]
h200
a100

[h200]
h200-[01:03]

[a100]
a100-01
"""


@pytest.fixture
def inventory(tmp_path):
    path = tmp_path / "hosts.ini"
    path.write_text(textwrap.dedent(INVENTORY))
    return load_inventory([str(path)], ssh_config_file=os.devnull)


def names(hosts):
    return [host.name for host in hosts]


ALL = ["web1", "web2", "web10", "db1", "h200-01", "h200-02", "h200-03", "a100-01"]


@pytest.mark.parametrize("pattern", [None, "all", "*", "!nothing-excluded*"])
def test_everything(inventory, pattern):
    assert names(inventory.select(pattern)) == ALL


@pytest.mark.parametrize("pattern", ["", "  ", "!", "&", ":", "::", "web:!", "web:&", ",", "!,&"])
def test_a_pattern_that_names_nothing_is_an_error_not_everything(inventory, pattern):
    with pytest.raises(InputError) as caught:
        inventory.select(pattern)
    assert caught.value.where == "--limit"


def test_an_empty_pattern_file_is_an_error_naming_it(inventory, tmp_path):
    empty = tmp_path / "hosts.txt"
    empty.write_text("# nothing here\n\n")
    with pytest.raises(InputError) as caught:
        inventory.select(f"@{empty}")
    assert caught.value.where == f"@{empty}" and "names no hosts" in caught.value.what


def test_a_pattern_file_that_is_a_fifo_is_refused_without_waiting(inventory, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        inventory.select(f"@{fifo}")


@pytest.mark.parametrize("expression", ["~(a|aa)+$", "~(w|we|web|web1)*z$", "~((w+)+)+x"])
def test_catastrophic_regular_expressions_are_refused_within_the_budget(tmp_path, expression):
    many = tmp_path / "many.ini"
    many.write_text("[w]\n" + "".join("w" * 60 + f"{i}\n" for i in range(3)))
    inventory = load_inventory([str(many)], ssh_config_file=os.devnull)
    started = time.monotonic()
    try:
        inventory.select(expression)
    except InputError as err:
        assert "took longer than" in err.what or "selects no hosts" in err.what
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("pattern, expected", [
    ("db", ["web2", "db1"]),                       # a group, in inventory order
    ("web10", ["web10"]),                          # a host
    ("gpu", ["h200-01", "h200-02", "h200-03", "a100-01"]),  # a parent group: all descendants
    ("db:h200", ["web2", "db1", "h200-01", "h200-02", "h200-03"]),
    ("h200,db", ["web2", "db1", "h200-01", "h200-02", "h200-03"]),  # union keeps inventory order
    ("web:&db", ["web2"]),
    ("web:!db", ["web1", "web10"]),
    ("web*", ["web1", "web2", "web10"]),           # matches group 'web' and the hosts
    ("h200-0?", ["h200-01", "h200-02", "h200-03"]),
    ("~web\\d$", ["web1", "web2"]),               # regex, matched from the start
    ("~h200-0[12]", ["h200-01", "h200-02"]),
    ("h200[0]", ["h200-01"]),
    ("h200[-1]", ["h200-03"]),
    ("h200[1:]", ["h200-02", "h200-03"]),
    ("h200[0:1]", ["h200-01", "h200-02"]),        # the end is included, as in Ansible
    ("!db", ["web1", "web10", "h200-01", "h200-02", "h200-03", "a100-01"]),  # exclusion alone: from all
    ("&gpu", ["h200-01", "h200-02", "h200-03", "a100-01"]),
])
def test_pattern_forms(inventory, pattern, expected):
    assert names(inventory.select(pattern)) == expected


def test_exclusions_apply_after_unions_whatever_the_written_order(inventory):
    assert names(inventory.select("!web2:web")) == ["web1", "web10"]
    assert names(inventory.select("!a100-01:&gpu:all")) == ["h200-01", "h200-02", "h200-03"]


def test_intersections_apply_after_all_unions(inventory):
    # Ansible: (web ∪ gpu) ∩ db, not (web ∩ db) ∪ gpu
    assert names(inventory.select("web:&db:gpu")) == ["web2"]


def test_pattern_file_one_pattern_per_line(inventory, tmp_path):
    listing = tmp_path / "retry.txt"
    listing.write_text("web1\n# a comment\n\nh200-02\n")
    assert names(inventory.select(f"@{listing}")) == ["web1", "h200-02"]
    assert names(inventory.select(f"@{listing}:!web1")) == ["h200-02"]


def test_unknown_name_is_an_error_with_suggestions(inventory):
    with pytest.raises(InputError) as caught:
        inventory.select("web:h20")
    message = str(caught.value)
    assert "no host or group named 'h20'" in message
    assert "did you mean h200" in message
    assert "'web:h20'" in message


def test_unknown_exclusion_is_an_error_too(inventory):
    with pytest.raises(InputError, match="no host or group named 'dbb'"):
        inventory.select("all:!dbb")


def test_pattern_selecting_nothing_is_an_error(inventory):
    with pytest.raises(InputError, match="host pattern 'web:&gpu' selects no hosts"):
        inventory.select("web:&gpu")
    with pytest.raises(InputError, match="selects no hosts"):
        inventory.select("nothing*")


def test_bad_regex_and_out_of_range_subscript(inventory):
    with pytest.raises(InputError, match="invalid regular expression"):
        inventory.select("~web(")
    with pytest.raises(InputError, match="'h200' has 3 hosts"):
        inventory.select("h200[5]")


def test_missing_pattern_file(inventory, tmp_path):
    with pytest.raises(InputError, match="cannot read host list"):
        inventory.select(f"@{tmp_path / 'nope.txt'}")


def test_unknown_host_lookup_suggests(inventory):
    with pytest.raises(InputError, match="no host named 'web3'; did you mean ") as caught:
        inventory.host("web3")
    assert {"web1", "web2"} <= set(caught.value.what.split("did you mean ")[1].rstrip("?").split(", "))
