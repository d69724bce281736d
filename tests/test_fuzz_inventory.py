"""Fuzzing the inventory loaders (YAML, INI, group_vars/host_vars) and host patterns: every input loads
or fails with our typed error, never another exception, a hang or unbounded memory."""

import os
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzcount import tried
from tritonops.errors import TritonopsError
from tritonops.inventory import load_inventory

HOSTILE_TEXT = st.sampled_from([
    "", " ", "-", "--", "-oProxyCommand=touch /tmp/canary", "$(touch /tmp/canary)", "`id`", ";", "|", "&",
    "\n", "\r\n", "\x00", "\x1b[31m", "%h", "%%", "[", "]", "[1:3]", "[a:c]", "[0:99999999]", "{", "}",
    "{{ x }}", "*", "?", "~", "!", "@", ":", "::1", "127.0.0.1", "host", "all", "ungrouped", "web",
    "ansible_host", "ansible_port", "ansible_user", "ansible_ssh_common_args", "tritonops_model",
    "ansible_connection", "local", "winrm", "-J a@b:c", "-o Port=0", "nan", "inf", "-1", "1e999", "0x10",
    "é", "\u202e", "𝕏", "yes", "no", "null", "~/x", "../..", "/dev/zero",
])
WORD = st.one_of(HOSTILE_TEXT, st.text(max_size=12))
SCALAR = st.one_of(WORD, st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                   st.none())
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(WORD, inner, max_size=4)), max_leaves=20)
HOST_VARS = st.dictionaries(st.one_of(st.sampled_from(["ansible_host", "ansible_port", "ansible_user",
                                                       "ansible_ssh_common_args", "ansible_connection",
                                                       "tritonops_connect_timeout", "ansible_group_priority"]), WORD),
                            VALUE, max_size=4)
GROUP = st.fixed_dictionaries({}, optional={
    "hosts": st.one_of(st.dictionaries(WORD, st.one_of(st.none(), HOST_VARS), max_size=3), VALUE),
    "vars": st.one_of(HOST_VARS, VALUE),
    "children": st.one_of(st.dictionaries(WORD, st.none(), max_size=3), VALUE),
})
YAML_INVENTORY = st.one_of(st.dictionaries(WORD, st.one_of(st.none(), GROUP), max_size=4), VALUE)
YAML_CHARS = st.lists(st.sampled_from(list("ab:-[]{}&*!|>'\"%@`#,? \n\t\\") + ["all", "hosts", "vars", "  "]),
                      max_size=120).map("".join)
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def load_files(files: dict[str, str], inventory: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            path = Path(folder) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            loaded = load_inventory([os.path.join(folder, inventory)], ssh_config_file=os.devnull)
        except TritonopsError as err:
            assert len(str(err).splitlines()) <= 1, str(err)
            return
        for host in loaded.hosts:  # whatever loaded is usable: every host has a checked connection
            assert host.connection.name == host.name


def dump(data) -> str:
    return yaml.safe_dump(data, allow_unicode=True)


@FUZZ
@given(YAML_INVENTORY)
def test_yaml_inventories_load_or_fail_with_our_error(data):
    tried["inventory yaml structures"] += 1
    load_files({"hosts.yml": dump(data)}, "hosts.yml")


@FUZZ
@given(YAML_CHARS)
def test_yaml_text_loads_or_fails_with_our_error(text):
    tried["inventory yaml text"] += 1
    load_files({"hosts.yml": text}, "hosts.yml")


INI_LINE = st.one_of(
    st.builds(lambda name: f"[{name}]", WORD),
    st.builds(lambda name, kind: f"[{name}:{kind}]", WORD, st.sampled_from(["vars", "children", "hosts", "x", ""])),
    st.builds(lambda host, var, value: f"{host} {var}={value}", WORD, WORD, WORD),
    st.builds(lambda var, value: f"{var}={value}", WORD, WORD),
    WORD,
)


@FUZZ
@given(st.lists(INI_LINE, max_size=12))
def test_ini_inventories_load_or_fail_with_our_error(lines):
    tried["inventory ini"] += 1
    load_files({"hosts.ini": "\n".join(line.replace("\x00", "") for line in lines) + "\n"}, "hosts.ini")


@FUZZ
@given(st.one_of(HOST_VARS, VALUE), st.one_of(HOST_VARS, VALUE), st.sampled_from(["all", "gpu", "h1", "nope"]))
def test_group_and_host_var_files_load_or_fail_with_our_error(group_vars, host_vars, name):
    tried["group_vars/host_vars"] += 1
    load_files({"hosts.ini": "[gpu]\nh1 ansible_host=127.0.0.1\n", f"group_vars/{name}.yml": dump(group_vars),
                f"host_vars/{name}/main.yml": dump(host_vars)}, "hosts.ini")


PATTERN_PIECE = st.one_of(st.sampled_from(["all", "*", "web", "web1", "db", "gpu", "h200-0[1:2]", "~web\\d+", "~(a|aa)+$",
                                           "web[0]", "web[-1]", "web[1:]", "web[:1]", "web[99]", "!", "&", ":", ",",
                                           "!db", "&web", "@/dev/null", "@/nonexistent", "w?b*", "[", "]", "~[",
                                           "~(", "::1", "[/x]"]), WORD)


@FUZZ
@given(st.lists(PATTERN_PIECE, min_size=0, max_size=6), st.sampled_from([":", ",", ":&", ":!", ""]))
def test_host_patterns_select_or_fail_with_our_error(pieces, joiner):
    tried["host patterns"] += 1
    inventory = _pattern_inventory()
    try:
        selected = inventory.select(joiner.join(pieces))
    except TritonopsError as err:
        assert len(str(err).splitlines()) <= 1
        return
    assert selected, "a selection is never empty: an empty one is an error"


_CACHE = {}


def _pattern_inventory():
    if "inventory" not in _CACHE:
        folder = tempfile.mkdtemp()
        path = Path(folder) / "hosts.ini"
        path.write_text("[web]\nweb1\nweb2\nweb10\n[db]\ndb1\n[gpu]\nh200-0[1:3]\n")
        _CACHE["inventory"] = load_inventory([str(path)], ssh_config_file=os.devnull)
    return _CACHE["inventory"]
