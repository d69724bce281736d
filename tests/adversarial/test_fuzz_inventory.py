"""Fuzzing the inventory loaders (YAML, INI, group_vars/host_vars) and host patterns: every input loads
or fails with our typed one-line error, never another exception, a hang or unbounded memory; whatever
loads hands SSH only inert values (tests/support/connection_oracle.py says what that means, independently of the
loader's own checks); a hostile address, user, port or ssh option is refused, and a hostile string in
any other variable is kept exactly as written. Each fuzzer checks that part of what it made loaded."""

import os
import re
import shlex
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.support.connection_oracle import (connection_problems, inert_address, inert_hop, inert_user, never_a_port,
                                             port_number)
from tests.support.fuzzcount import accepted, fuzzed, tried
from tritonops.errors import TritonopsError
from tritonops.inventory import load_inventory

HOSTILE_TEXT = st.sampled_from([
    "", " ", "-", "--", "-oProxyCommand=touch /tmp/canary", "$(touch /tmp/canary)", "`id`", ";", "|", "&",
    "\n", "\r\n", "\x00", "\x1b[31m", "%h", "%%", "[", "]", "[1:3]", "[a:c]", "[0:99999999]", "{", "}",
    "{{ x }}", "*", "?", "~", "!", "@", ":", "::1", "127.0.0.1", "host", "all", "ungrouped", "web",
    "ansible_host", "ansible_port", "ansible_user", "ansible_ssh_common_args", "tritonops_model",
    "ansible_connection", "local", "winrm", "-J a@b:c", "-o Port=0", "-o StrictHostKeyChecking=no", "nan", "inf",
    "-1", "1e999", "0x10", "é", "\u202e", "𝕏", "yes", "no", "null", "~/x", "../..", "/dev/zero",
])
WORD = st.one_of(HOSTILE_TEXT, st.text(max_size=12))
SCALAR = st.one_of(WORD, st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                   st.none())
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(WORD, inner, max_size=4)), max_leaves=20)
# What a real inventory holds, drawn beside the hostile values: without it almost nothing loads and a
# fuzzer would only ever test the first check.
PLAIN = {"ansible_host": ["127.0.0.1", "10.0.0.7", "gpu-01.lab", "::1"], "ansible_port": [22, "2222"],
         "ansible_user": ["root", "ubuntu"], "ansible_connection": ["ssh", "local"],
         "ansible_ssh_common_args": ["-o ProxyJump=bastion", "-o StrictHostKeyChecking=accept-new -p 2200"],
         "tritonops_connect_timeout": [5, 30.5], "ansible_group_priority": [1, 10], "note": ["a note"],
         "tritonops_model": ["org/model"]}
PLAIN_NAME = st.sampled_from(["h1", "h2", "gpu-01", "10.0.0.5", "web", "gpu", "db", "node-0[1:3]"])
NAME_OR_WORD = st.one_of(PLAIN_NAME, PLAIN_NAME, WORD)


def var_value(key):
    return st.one_of(st.sampled_from(PLAIN[key]), st.sampled_from(PLAIN[key]), VALUE) if key in PLAIN else VALUE


def host_vars(keys):
    return st.lists(keys, max_size=4, unique=True).flatmap(
        lambda names: st.fixed_dictionaries({name: var_value(name) for name in names}))


HOST_VARS = st.one_of(host_vars(st.sampled_from(list(PLAIN))), host_vars(st.sampled_from(list(PLAIN))),
                      host_vars(st.one_of(st.sampled_from(list(PLAIN)), WORD)))
HOSTS = st.dictionaries(NAME_OR_WORD, st.one_of(st.none(), HOST_VARS), min_size=1, max_size=3)
GROUP_VARS = st.one_of(HOST_VARS, HOST_VARS, VALUE)
CHILDREN = st.one_of(st.dictionaries(NAME_OR_WORD, st.one_of(st.none(), st.fixed_dictionaries({"hosts": HOSTS})),
                                     max_size=3), VALUE)
GROUP = st.fixed_dictionaries({}, optional={"hosts": st.one_of(HOSTS, VALUE), "vars": GROUP_VARS, "children": CHILDREN})
GROUP_WITH_HOSTS = st.fixed_dictionaries({"hosts": HOSTS}, optional={"vars": GROUP_VARS, "children": CHILDREN})
ALL_GROUP = st.builds(lambda group: {"all": group}, GROUP_WITH_HOSTS)
YAML_INVENTORY = st.one_of(st.dictionaries(NAME_OR_WORD, st.one_of(st.none(), GROUP, GROUP_WITH_HOSTS), max_size=4),
                           ALL_GROUP, ALL_GROUP, VALUE)
YAML_PIECES = st.sampled_from(list("ab:-[]{}&*!|>'\"%@`#,? \n\t\\") + ["all", "hosts", "vars", "  "])
YAML_CHARS = st.lists(YAML_PIECES, max_size=120).map("".join)
YAML_TEXTS = [
    "all:\n  hosts:\n    h1:\n      ansible_host: 10.0.0.1\n      ansible_port: 22\n",
    "all:\n  children:\n    gpu:\n      hosts:\n        gpu-0[1:2]:\n          ansible_user: root\n"
    "  vars:\n    ansible_ssh_common_args: -o ProxyJump=bastion\n",
    "web:\n  hosts:\n    web1:\n    web2: {ansible_host: 127.0.0.1, note: '$(id)'}\n",
]


def edited(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each (position, characters deleted there, text inserted there) applied in turn."""
    for position, deleted, inserted in edits:
        position %= len(text) + 1
        text = text[:position] + inserted + text[position + deleted:]
    return text


YAML_EDITED = st.builds(edited, st.sampled_from(YAML_TEXTS),
                        st.lists(st.tuples(st.integers(0, 10**4), st.integers(0, 3),
                                           st.lists(YAML_PIECES, max_size=3).map("".join)), max_size=3))
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def load_files(files: dict[str, str], inventory: str):
    """The inventory loaded from `files` (each name: its text), or None when refused (in one line)."""
    with tempfile.TemporaryDirectory() as folder:
        for name, text in files.items():
            path = Path(folder) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            loaded = load_inventory([os.path.join(folder, inventory)], ssh_config_file=os.devnull)
        except TritonopsError as err:
            assert len(str(err).splitlines()) <= 1, str(err)
            return None
    for host in loaded.hosts:  # whatever loaded hands SSH nothing but inert values
        assert not connection_problems(host.connection), (host.name, connection_problems(host.connection))
    return loaded


def counted_load(name: str, files: dict[str, str], inventory: str) -> None:
    """Counted as accepted when it loaded with at least one host (an inventory of empty groups reaches
    no connection check)."""
    tried[name] += 1
    loaded = load_files(files, inventory)
    if loaded is not None and loaded.hosts:
        accepted[name] += 1


def dump(data) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


@FUZZ
@given(YAML_INVENTORY)
def _fuzz_yaml_inventories(data):
    counted_load("inventory yaml structures", {"hosts.yml": dump(data)}, "hosts.yml")


def test_yaml_inventories_load_inert_or_fail_with_our_error():
    fuzzed("inventory yaml structures", _fuzz_yaml_inventories, examples=400, accepted_share=0.02)


@FUZZ
@given(st.one_of(YAML_CHARS, YAML_EDITED))
def _fuzz_yaml_text(text):
    counted_load("inventory yaml text", {"hosts.yml": text}, "hosts.yml")


def test_yaml_text_loads_inert_or_fails_with_our_error():
    fuzzed("inventory yaml text", _fuzz_yaml_text, examples=400, accepted_share=0.04)


INI_LINE = st.one_of(
    st.builds(lambda name: f"[{name}]", WORD),
    st.builds(lambda name, kind: f"[{name}:{kind}]", WORD, st.sampled_from(["vars", "children", "hosts", "x", ""])),
    st.builds(lambda host, var, value: f"{host} {var}={value}", WORD, WORD, WORD),
    st.builds(lambda var, value: f"{var}={value}", WORD, WORD),
    WORD,
)


def ini_value(key: str):
    plain = st.sampled_from([f"'{value}'" if " " in str(value) else str(value) for value in PLAIN[key]])
    return st.one_of(plain, plain, WORD).map(lambda value: f"{key}={value}")


INI_ASSIGNMENT = st.sampled_from(list(PLAIN)).flatmap(ini_value)
INI_HOST = st.builds(lambda host, settings: " ".join([host, *settings]), NAME_OR_WORD,
                     st.lists(INI_ASSIGNMENT, max_size=3))


def ini_text(hosts: list[str], group_vars: list[str], hostile: tuple[int, str] | None) -> list[str]:
    """A well-formed inventory of a [gpu] group, its vars and [all:children], one line maybe replaced."""
    lines = ["[gpu]", *hosts, "[gpu:vars]", *group_vars, "[all:children]", "gpu"]
    if hostile is not None:
        lines[hostile[0] % len(lines)] = hostile[1]
    return lines


INI_SHAPED = st.builds(ini_text, st.lists(INI_HOST, min_size=1, max_size=3), st.lists(INI_ASSIGNMENT, max_size=3),
                       st.one_of(st.none(), st.tuples(st.integers(0, 20), INI_LINE)))


@FUZZ
@given(st.one_of(st.lists(INI_LINE, max_size=12), INI_SHAPED, INI_SHAPED))
def _fuzz_ini(lines):
    counted_load("inventory ini", {"hosts.ini": "\n".join(line.replace("\x00", "") for line in lines) + "\n"},
                 "hosts.ini")


def test_ini_inventories_load_inert_or_fail_with_our_error():
    fuzzed("inventory ini", _fuzz_ini, examples=400, accepted_share=0.02)


@FUZZ
@given(st.one_of(HOST_VARS, VALUE), st.one_of(HOST_VARS, VALUE), st.sampled_from(["all", "gpu", "h1", "nope"]))
def _fuzz_var_files(group_vars, host_vars, name):
    counted_load("group_vars/host_vars",
                 {"hosts.ini": "[gpu]\nh1 ansible_host=127.0.0.1\n", f"group_vars/{name}.yml": dump(group_vars),
                  f"host_vars/{name}/main.yml": dump(host_vars)}, "hosts.ini")


def test_group_and_host_var_files_load_inert_or_fail_with_our_error():
    fuzzed("group_vars/host_vars", _fuzz_var_files, examples=400, accepted_share=0.15)


# --- hostile values where SSH would get them: refused, or kept exactly as written ----------------

def benign_or_hostile(benign_values: list, hostile_values) -> st.SearchStrategy:
    """(value, benign) pairs, two benign for one hostile: an example loads only when all its values are benign."""
    benign = st.sampled_from(benign_values).map(lambda value: (value, True))
    return st.one_of(benign, benign, hostile_values.map(lambda value: (value, False)))


ADDRESS = benign_or_hostile(["127.0.0.1", "10.0.0.7", "::1", "fe80::1%eth0", "gpu-01.example.com", "h_1", "db"], WORD)
USER = benign_or_hostile(["root", "ubuntu", "svc.deploy", "ops@corp", "u_1", 1000],
                         st.one_of(WORD, st.integers(-5, 5)))
PORT = benign_or_hostile([22, 2222, 65535, "22", "8022"], st.one_of(
    WORD, st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none()))
SSH_ARGS = benign_or_hostile(  # (option, word)
    [("-o ProxyJump=", "bastion"), ("-J ", "ops@bastion:2222"), ("-J ", "a,b"), ("-o ProxyJump=", "none"),
     ("-o StrictHostKeyChecking=", "accept-new"), ("-o StrictHostKeyChecking=", "yes"), ("-o ConnectTimeout=", "30"),
     ("-p ", "22"), ("-o Port=", "2222"), ("-l ", "root"), ("-o User=", "deploy")],
    st.one_of(
        st.tuples(st.just("-o StrictHostKeyChecking="),
                  st.one_of(st.sampled_from(["no", "off", "false", "NO", "ask", "maybe", ""]), WORD)),
        st.tuples(st.sampled_from(["-o ProxyJump=", "-J "]),
                  st.one_of(st.sampled_from(["a,,b", "a,-b", "-x", "u@h@i", "[::1]:22", "%h", "a b", "h;id"]), WORD)),
        st.tuples(st.sampled_from(["-o User=", "-l ", "-o Port=", "-p "]), WORD),
        st.tuples(st.just("-o ConnectTimeout="), st.one_of(st.sampled_from(["0", "-1", "nan", "1e9"]), WORD))))
# Host names without inventory syntax: a range ([1:3]) or a port (web:22) stands for other names.
BENIGN_NAMES = ("h1", "h2", "gpu-01", "10.0.0.9")
NAME = st.one_of(st.sampled_from(BENIGN_NAMES), st.sampled_from(BENIGN_NAMES), WORD).filter(
    lambda name: "[" not in name and not re.fullmatch(r"[^:]+:\d+", name))
HOST = st.fixed_dictionaries({}, optional={"ansible_host": ADDRESS, "ansible_user": USER, "ansible_port": PORT,
                                           "ansible_ssh_common_args": SSH_ARGS})


def simple_word(word: str) -> bool:
    """A word shlex splits to exactly itself: then the option's value is that word."""
    return not any(char.isspace() or char in "'\"\\" for char in word)


def option_refusal(option: str, word: str) -> str | None:
    """Why ssh args `option + word` must be refused, or None when they need not be."""
    try:
        shlex.split(option + word)
    except ValueError:
        return "unsplittable"
    if not simple_word(word):
        return None
    if "StrictHostKeyChecking" in option and word.lower() not in ("yes", "true", "ask", "accept-new"):
        return f"StrictHostKeyChecking={word}"
    if ("ProxyJump" in option or option == "-J ") and word.lower() != "none" and \
            not all(inert_hop(hop.strip()) for hop in word.split(",")):
        return f"ProxyJump {word!r}"
    if ("User" in option or option == "-l ") and not inert_user(word):
        return f"User {word!r}"
    if ("Port" in option or option == "-p ") and never_a_port(word):
        return f"Port {word!r}"
    return None


def must_refuse(name: str, host: dict) -> list[str]:
    reasons = []
    address = host["ansible_host"][0] if "ansible_host" in host else name
    if not inert_address(address):
        reasons.append(f"address {address!r}")
    if "ansible_user" in host and not inert_user(host["ansible_user"][0]):
        reasons.append(f"user {host['ansible_user'][0]!r}")
    if "ansible_port" in host and never_a_port(host["ansible_port"][0]):
        reasons.append(f"port {host['ansible_port'][0]!r}")
    if "ansible_ssh_common_args" in host and (why := option_refusal(*host["ansible_ssh_common_args"][0])):
        reasons.append(why)
    return reasons


def all_benign(name: str, host: dict) -> bool:
    """Drawn only from the plain values (a name it dials only from the plain names): it must load."""
    connection = ("ansible_host", "ansible_user", "ansible_port", "ansible_ssh_common_args")
    return (name in BENIGN_NAMES or "ansible_host" in host) and all(host[key][1] for key in connection if key in host)


def expected_connection(name: str, host: dict) -> dict:
    """What the loaded connection must say, as far as the given values plainly decide it."""
    expected = {"host": host["ansible_host"][0] if "ansible_host" in host else name}
    option, word = host["ansible_ssh_common_args"][0] if "ansible_ssh_common_args" in host else ("", "")
    simple = simple_word(word) and word != ""
    if "ansible_user" in host:
        expected["user"] = str(host["ansible_user"][0])
    elif simple and ("User" in option or option == "-l "):
        expected["user"] = word
    if "ansible_port" in host:
        if port_number(host["ansible_port"][0]) is not None:
            expected["port"] = port_number(host["ansible_port"][0])
    elif simple and ("Port" in option or option == "-p ") and port_number(word) is not None:
        expected["port"] = port_number(word)
    if simple and ("ProxyJump" in option or option == "-J "):
        expected["proxy_jump"] = None if word.lower() == "none" else word
    if "StrictHostKeyChecking" in option and word.lower() in ("yes", "true", "ask", "accept-new"):
        expected["strict_host_key_checking"] = "accept-new" if word.lower() == "accept-new" else "yes"
    return expected


def as_written(key: str, value):
    if key == "ansible_ssh_common_args":
        return "".join(value[0])  # (option, word)
    return value[0] if key.startswith("ansible_") else value


@FUZZ
@given(st.dictionaries(NAME, HOST, min_size=1, max_size=3))
def _fuzz_hostile_connection_values(hosts):
    written = {name: {key: as_written(key, value) for key, value in host.items()} for name, host in hosts.items()}
    refusals = {name: must_refuse(name, host) for name, host in hosts.items()}
    text = dump({"all": {"hosts": written}})
    # YAML itself reads a few characters back changed (NEL becomes a space): not what is tested here
    assume(repr(yaml.safe_load(text)) == repr({"all": {"hosts": written}}))
    tried["inventory hostile connection values"] += 1
    loaded = load_files({"hosts.yml": text}, "hosts.yml")
    if loaded is None:
        assert not all(all_benign(name, host) for name, host in hosts.items()), f"benign values refused: {written}"
        return
    accepted["inventory hostile connection values"] += 1
    assert not any(refusals.values()), f"hostile values loaded: {refusals}"
    assert [host.name for host in loaded.hosts] == list(hosts)
    for host in loaded.hosts:
        for field, value in expected_connection(host.name, hosts[host.name]).items():
            assert getattr(host.connection, field) == value, (host.name, field, getattr(host.connection, field))


def test_hostile_connection_values_are_refused_and_plain_ones_kept():
    fuzzed("inventory hostile connection values", _fuzz_hostile_connection_values, examples=400,
           accepted_share=0.03)


# Any other variable is data: whatever it holds ($(...), {{ }}, escapes, ~, ../..) comes back exactly as
# written, from wherever it was set (inline host or group vars, group_vars/, host_vars/).
FREE_VALUE = st.recursive(
    st.one_of(HOSTILE_TEXT, HOSTILE_TEXT, st.text(max_size=12), st.integers(-2**70, 2**70), st.booleans(), st.none(),
              st.floats(allow_nan=True, allow_infinity=True)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(WORD, inner, max_size=3)), max_leaves=8)
VAR_PLACES = ("host", "group", "group_vars", "host_vars")


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(VAR_PLACES), FREE_VALUE), min_size=1, max_size=6))
def _fuzz_values_kept(placed):
    values = {f"v{index}_{place}": (place, value) for index, (place, value) in enumerate(placed)}
    at = {place: {name: value for name, (where, value) in values.items() if where == place} for place in VAR_PLACES}
    documents = {"hosts.yml": {"gpu": {"hosts": {"h1": {"ansible_host": "10.0.0.1", **at["host"]}},
                                       "vars": at["group"]}},
                 "group_vars/gpu.yml": at["group_vars"], "host_vars/h1.yml": at["host_vars"]}
    texts = {name: dump(document) for name, document in documents.items()}
    # YAML itself reads a few characters back changed (NEL becomes a space): not what is tested here
    assume(all(repr(yaml.safe_load(texts[name])) == repr(document) for name, document in documents.items()))
    tried["inventory values kept as written"] += 1
    loaded = load_files(texts, "hosts.yml")
    assert loaded is not None, "plain variables holding data were refused"
    accepted["inventory values kept as written"] += 1
    host = loaded.host("h1")
    for name, (place, value) in values.items():  # repr: nan is kept too
        assert repr(host.vars[name]) == repr(value), (place, value, host.vars[name])


def test_any_other_variable_is_kept_exactly_as_written():
    fuzzed("inventory values kept as written", _fuzz_values_kept, examples=400, accepted_share=1.0)


PATTERN_HOSTS = {"web": ["web1", "web2", "web10"], "db": ["db1"], "gpu": ["h200-01", "h200-02", "h200-03"]}
INVENTORY_ORDER = [name for names in PATTERN_HOSTS.values() for name in names]
PATTERN_PIECE = st.one_of(st.sampled_from(list(PATTERN_HOSTS) + INVENTORY_ORDER), st.sampled_from([
    "all", "*", "web", "web1", "db", "gpu", "h200-0[1:2]", "~web\\d+", "~(a|aa)+$", "web[0]", "web[-1]", "web[1:]",
    "web[:1]", "web[99]", "!", "&", ":", ",", "!db", "&web", "@/dev/null", "@/nonexistent", "w?b*", "[", "]", "~[",
    "~(", "::1", "[/x]"]), WORD)


def expected_selection(pieces: list[str], joiner: str) -> list[str] | None:
    """A union of plain group and host names selects exactly their hosts (inventory order); None when
    the pattern uses anything else."""
    if joiner not in (":", ",") or not pieces or any(piece not in PATTERN_HOSTS and piece not in INVENTORY_ORDER
                                                     for piece in pieces):
        return None
    chosen = {name for piece in pieces for name in PATTERN_HOSTS.get(piece, [piece])}
    return [name for name in INVENTORY_ORDER if name in chosen]


@FUZZ
@given(st.lists(PATTERN_PIECE, min_size=0, max_size=6), st.sampled_from([":", ",", ":&", ":!", ""]))
def _fuzz_host_patterns(pieces, joiner):
    tried["host patterns"] += 1
    inventory = _pattern_inventory()
    try:
        selected = inventory.select(joiner.join(pieces))
    except TritonopsError as err:
        assert len(str(err).splitlines()) <= 1
        return
    accepted["host patterns"] += 1
    names = [host.name for host in selected]
    assert names, "a selection is never empty: an empty one is an error"
    assert names == [name for name in INVENTORY_ORDER if name in names], "inventory order, each host once"
    expected = expected_selection(pieces, joiner)
    assert expected is None or names == expected, (pieces, joiner, names)


def test_host_patterns_select_or_fail_with_our_error():
    fuzzed("host patterns", _fuzz_host_patterns, examples=400, accepted_share=0.02)


_CACHE = {}


def _pattern_inventory():
    if "inventory" not in _CACHE:
        folder = tempfile.mkdtemp()
        path = Path(folder) / "hosts.ini"
        path.write_text("[web]\nweb1\nweb2\nweb10\n[db]\ndb1\n[gpu]\nh200-0[1:3]\n")
        _CACHE["inventory"] = load_inventory([str(path)], ssh_config_file=os.devnull)
    return _CACHE["inventory"]
