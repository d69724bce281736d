"""Inventory files built to exhaust memory or time, or that are not files at all, are refused with
one line naming the file (and line where there is one)."""

import os

import pytest

from tritonops.errors import InputError
from tritonops.inventory import load_inventory
from tritonops.inventory.host_ranges import MAX_HOSTS_PER_PATTERN, expand_host_range

BILLION_LAUGHS = """
a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
"""


def load(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return load_inventory([str(path)], ssh_config_file=os.devnull)


def test_an_alias_bomb_in_an_inventory_is_refused_at_its_line(tmp_path):
    text = "all:\n  hosts:\n    h1:\n  vars:\n" + "".join("    " + line + "\n" for line in BILLION_LAUGHS.strip().splitlines())
    with pytest.raises(InputError) as caught:
        load(tmp_path, "hosts.yml", text)
    assert "alias bomb" in caught.value.what
    assert caught.value.where.startswith(str(tmp_path / "hosts.yml") + ":")


def test_an_alias_bomb_in_group_vars_is_refused(tmp_path):
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text(BILLION_LAUGHS)
    with pytest.raises(InputError, match="alias bomb"):
        load(tmp_path, "hosts.ini", "h1\n")


def test_modest_aliases_still_work(tmp_path):
    text = "all:\n  vars:\n    base: &base {a: 1, b: [1, 2]}\n    copy: *base\n  hosts:\n    h1:\n"
    inventory = load(tmp_path, "hosts.yml", text)
    assert inventory.host("h1").vars["copy"] == {"a": 1, "b": [1, 2]}


def test_a_self_containing_alias_is_refused(tmp_path):
    with pytest.raises(InputError, match="contains it"):
        load(tmp_path, "hosts.yml", "all:\n  vars:\n    loop: &x [1, *x]\n  hosts:\n    h1:\n")


def test_deep_nesting_is_refused_not_a_recursion_traceback(tmp_path):
    with pytest.raises(InputError) as caught:
        load(tmp_path, "hosts.yml", "all:\n  vars:\n    deep: " + "[" * 5000 + "]" * 5000 + "\n")
    assert str(tmp_path / "hosts.yml") in str(caught.value)


@pytest.mark.parametrize("pattern", ["web[1:999999]", "r[a:z]-n[0:999]", "x[0:99999999999999999999999]"])
def test_huge_host_ranges_are_refused_with_the_cap(pattern):
    with pytest.raises(InputError) as caught:
        expand_host_range(pattern, "hosts.ini:3")
    assert f"{MAX_HOSTS_PER_PATTERN:,}" in caught.value.what and caught.value.where == "hosts.ini:3"


def test_a_range_at_the_cap_still_expands():
    assert len(expand_host_range(f"n[1:{MAX_HOSTS_PER_PATTERN}]", "x")) == MAX_HOSTS_PER_PATTERN


def test_unicode_digits_in_a_range_are_an_error_not_a_crash():
    with pytest.raises(InputError):
        expand_host_range("web[1:²]", "hosts.ini:1")


@pytest.mark.parametrize("kind", ["fifo", "directory-as-var-file", "big"])
def test_files_that_would_block_or_exhaust_memory_are_refused(tmp_path, kind):
    if kind == "fifo":
        target = tmp_path / "hosts.yml"
        os.mkfifo(target)
        expected = "not a regular file"
    elif kind == "big":
        target = tmp_path / "hosts.yml"
        with open(target, "wb") as handle:
            handle.truncate(17 * 1024 * 1024)
        expected = "larger than 16 MiB"
    else:
        target = tmp_path / "hosts.ini"
        target.write_text("h1\n")
        (tmp_path / "host_vars").mkdir()
        os.mkfifo(tmp_path / "host_vars" / "h1.yml")
        expected = "not a regular file"
    with pytest.raises(InputError, match=expected):
        load_inventory([str(target)], ssh_config_file=os.devnull)
