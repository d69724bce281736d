"""What a host prints is untrusted: the probe's parser checks every value it keeps (the facts classes are
plain dataclasses that check nothing), so any output is either facts that match the documented schema or
one line of ProbeOutputError naming the bad field."""

import copy
import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fuzzcount import tried
from tests.support.paths import FIXTURES
from tritonops.facts.model import HostProbe, ProbeReport, report_from_json, report_to_json
from tritonops.facts.probe_parse import ProbeOutputError, parse_probe_output
from tritonops.facts.schema import probe_report_schema

REAL = json.loads((FIXTURES / "real" / "h200x2" / "probe-raw-busy.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(probe_report_schema())


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, prefix + (index,))


def replaced(raw, path, value):
    if not path:
        return value
    parent = raw
    for step in path[:-1]:
        try:
            parent = parent[step]
        except (KeyError, IndexError, TypeError):
            return raw  # an earlier replacement removed this place
    try:
        parent[path[-1]] = value
    except (IndexError, TypeError):
        pass
    return raw


SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                   st.text(max_size=12), st.sampled_from(["12", "\x1b[31m", "\x00", "-1", "9.0"]))
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                     max_leaves=8)


def as_report(facts):
    return report_to_json(ProbeReport(hosts=(HostProbe(host="h", status="ok", facts=facts),)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(list(paths(REAL))), VALUE), min_size=1, max_size=3))
def test_any_changed_output_is_schema_valid_facts_or_one_line_error(changes):
    tried["probe output changed"] += 1
    raw = copy.deepcopy(REAL)
    for path, value in changes:
        raw = replaced(raw, path, value)
    try:
        facts = parse_probe_output(json.dumps(raw))
    except ProbeOutputError as err:
        assert len(str(err).splitlines()) == 1 and len(str(err)) < 300, str(err)
        return
    data = as_report(facts)
    VALIDATOR.validate(data)
    assert report_from_json(data).hosts[0].facts == facts  # pydantic reads back exactly what was kept


@pytest.mark.parametrize("path,value,named", [
    (("system", "ram_total"), "270334464000", "system.ram_total: '270334464000'"),
    (("system", "cpu_count"), True, "system.cpu_count: True"),
    (("system", "hostname"), None, "system.hostname: None"),
    (("nvml", "gpus", 0, "memory", "total"), 1.5e11, "GPU 0.memory.total: 150000000000.0"),
    (("nvml", "gpus", 1, "cc"), [9], "GPU 1.cc: [9]"),
    (("nvml", "gpus", 0, "processes", 0, "pid"), "630", "GPU 0 process.pid: '630'"),
    (("nvml", "gpus", 0, "errors"), ["ok", 3], "GPU 0.errors: 3 is not text"),
    (("nvml", "gpus", 0, "name"), ["NVIDIA H200"], "GPU 0.name: ['NVIDIA H200']"),
    (("docker", "runtimes"), "nvidia", "docker.runtimes: 'nvidia'"),
    (("nvml", "gpus", 0), "\x1b[2J", r"a bad GPU: '\x1b[2J' is not an object"),
])
def test_a_wrong_value_is_named_in_one_line(path, value, named):
    raw = replaced(copy.deepcopy(REAL), path, value)
    with pytest.raises(ProbeOutputError) as caught:
        parse_probe_output(json.dumps(raw))
    assert named in str(caught.value) and "\n" not in str(caught.value) and "\x1b" not in str(caught.value)


def test_missing_required_field_is_named():
    raw = copy.deepcopy(REAL)
    del raw["system"]["disk_total"]
    with pytest.raises(ProbeOutputError, match=r"no system\.disk_total"):
        parse_probe_output(json.dumps(raw))


def test_the_real_output_round_trips_through_the_schema():
    facts = parse_probe_output(json.dumps(REAL))
    data = as_report(facts)
    VALIDATOR.validate(data)
    assert report_from_json(data).hosts[0].facts == facts


def test_a_saved_report_with_a_wrong_type_is_one_line_naming_the_field():
    from tritonops.facts.model import ReportFileError

    data = as_report(parse_probe_output(json.dumps(REAL)))
    data["hosts"][0]["facts"]["nvidia"]["gpus"][1]["memory_free_bytes"] = "lots"
    with pytest.raises(ReportFileError, match=r"^hosts\.0\.facts\.nvidia\.gpus\.1\.memory_free_bytes: .*\(1 problem"):
        report_from_json(data)
