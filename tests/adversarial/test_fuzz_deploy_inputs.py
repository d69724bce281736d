"""Fuzzing what a deploy reads besides the inventory: playbooks and roles, -e values, and the
release.json files read back from hosts (tampered, truncated, not ours). Every input gives a result
or our typed one-line error, never another exception; a valid playbook compiles to exactly the tasks it
names, per host, with the arguments it wrote (tests/support/playbook_model.py says which, without asking the engine);
a release read back damaged is never started. Each fuzzer checks that part of what it made was accepted."""

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.support.fuzzcount import accepted, fuzzed, tried
from tests.support.playbook_model import HOSTS, PLAYBOOKS, PlaybookSpec
from tests.support.serve_records import HOST_PORTS
from tritonops.errors import TritonopsError
from tritonops.operations.serve import ContainerSettings, serve_step
from tritonops.playbook import compile_playbook, load_run_inputs, parse_extra_vars
from tritonops.serving import releases
from tritonops.serving.releases import parse_releases, rollback_target

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
WORD = st.one_of(st.sampled_from(["", "hosts", "all", "roles", "tasks", "name", "vars", "serial", "when", "loop",
                                  "tags", "never", "model_weights", "serve_release", "put_file", "{{ x }}",
                                  "{{ tritonops_deploy.root }}", "{% for %}", "$(touch /tmp/canary)", "-", "\x00",
                                  "\x1b[31m", "../..", "/etc/passwd", "100%", "1e999", "nan", "yes", "~"]),
                 st.text(max_size=10))
SCALAR = st.one_of(WORD, st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.booleans(), st.none())
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(WORD, inner, max_size=4)), max_leaves=25)
TASK = st.one_of(VALUE, st.fixed_dictionaries({"name": WORD}, optional={
    "serve_release": VALUE, "model_weights": VALUE, "when": VALUE, "loop": VALUE, "tags": VALUE, "vars": VALUE}))
PLAY = st.one_of(VALUE, st.fixed_dictionaries({"hosts": WORD}, optional={
    "roles": st.one_of(VALUE, st.lists(st.one_of(st.just("fuzzrole"), WORD, VALUE), max_size=3)),
    "tasks": st.one_of(VALUE, st.lists(TASK, max_size=3)), "serial": VALUE, "max_fail_percentage": VALUE,
    "vars": VALUE, "name": WORD}))


def one_line(err: TritonopsError) -> None:
    assert len(str(err).splitlines()) <= 1, str(err)


def write_playbook(root: Path, documents: dict) -> bool:
    """The files of `documents` under `root`; False when YAML would read one back changed (NEL becomes a
    space: a YAML quirk, not what is tested)."""
    for name, document in documents.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
        if repr(yaml.safe_load(text)) != repr(document):
            return False
        path.write_text(text)
    return True


def compiled(root: Path, **options):
    return compile_playbook(load_run_inputs(str(root / "play.yml"), [str(root / "hosts.yml")]), **options)


def replaced(document, steps: list[int], value):
    """`document` with the node that `steps` lead to (each picks a child, modulo their number) replaced."""
    if not steps or not isinstance(document, (dict, list)) or not document:
        return value
    if isinstance(document, dict):
        key = list(document)[steps[0] % len(document)]
        return {**document, key: replaced(document[key], steps[1:], value)}
    index = steps[0] % len(document)
    return [*document[:index], replaced(document[index], steps[1:], value), *document[index + 1:]]


def mutated(spec: PlaybookSpec, file: int, steps: list[int], value) -> dict:
    """A valid playbook's files, one node of one file replaced by `value`."""
    documents = spec.documents()
    name = sorted(documents)[file % len(documents)]
    return {**documents, name: replaced(documents[name], steps, value)}


def hostile_files(plays, role_tasks, role_defaults) -> dict:
    return {"play.yml": plays, "roles/fuzzrole/tasks/main.yml": role_tasks,
            "roles/fuzzrole/defaults/main.yml": role_defaults,
            "hosts.yml": {"all": {"hosts": {"h1": {"ansible_host": "10.0.0.1"}}}}}


PLAYBOOK_FILES = st.one_of(
    st.builds(hostile_files, st.one_of(VALUE, st.lists(PLAY, max_size=3)), st.one_of(VALUE, st.lists(TASK, max_size=3)),
              VALUE),
    PLAYBOOKS.map(PlaybookSpec.documents),
    st.builds(mutated, PLAYBOOKS, st.integers(0, 3), st.lists(st.integers(0, 10), max_size=6), VALUE))


@FUZZ
@given(PLAYBOOK_FILES)
def _fuzz_playbooks(files):
    with tempfile.TemporaryDirectory() as folder:
        assume(write_playbook(Path(folder), files))
        tried["playbooks and roles"] += 1
        try:
            compiled(Path(folder))
        except TritonopsError as err:
            one_line(err)
            return
    accepted["playbooks and roles"] += 1


def test_any_playbook_and_role_load_and_compile_or_fail_in_one_line():
    fuzzed("playbooks and roles", _fuzz_playbooks, examples=300, accepted_share=0.1)


@FUZZ
@given(PLAYBOOKS)
def _fuzz_valid_playbooks(spec):
    with tempfile.TemporaryDirectory() as folder:
        assume(write_playbook(Path(folder), spec.documents()))
        tried["valid playbooks"] += 1
        playbook = compiled(Path(folder), tags=spec.tags, skip_tags=spec.skip_tags)
    accepted["valid playbooks"] += 1
    expected = spec.expected_plays()
    assert len(playbook.plays) == len(expected)
    for play, wanted in zip(playbook.plays, expected):
        assert play.hosts == wanted["hosts"]
        assert [(task.task.name, task.operation.name) for task in play.tasks] == \
            [(name, operation) for name, operation, _ in wanted["tasks"]]
        for task, (_, _, per_host) in zip(play.tasks, wanted["tasks"]):
            got = {host: None if done.skipped else [args.model_dump() for args in done.args]
                   for host, done in task.hosts.items()}
            assert got == per_host, (task.task.name, got, per_host)
    used = {host for play in expected for host in play["hosts"]}
    assert [connection.name for connection in playbook.connections] == [host for host in HOSTS if host in used]


def test_a_valid_playbook_compiles_to_the_tasks_it_names_with_the_arguments_it_wrote():
    fuzzed("valid playbooks", _fuzz_valid_playbooks, examples=300, accepted_share=1.0)


EXTRA = st.one_of(WORD, st.text(max_size=40), VALUE.map(lambda v: json.dumps(v, default=str)),
                  st.builds(lambda k, v: f"{k}={v}", WORD, WORD),
                  st.builds(lambda k, v: "{" + f"{k}: {v}" + "}", WORD, WORD))


IDENTIFIER = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
JSON_VALUE = st.recursive(
    st.one_of(WORD, st.integers(-2**70, 2**70), st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(WORD, inner, max_size=3)), max_leaves=10)
ONE_EXTRA = st.one_of(  # (as typed after -e, the mapping it means)
    st.dictionaries(IDENTIFIER, WORD, min_size=1, max_size=3).map(
        lambda pairs: (" ".join(shlex.quote(f"{name}={value}") for name, value in pairs.items()), pairs)),
    st.dictionaries(IDENTIFIER, JSON_VALUE, max_size=3).map(lambda mapping: (json.dumps(mapping), mapping)))


@FUZZ
@given(given_values=st.lists(st.one_of(EXTRA, ONE_EXTRA.map(lambda given: given[0])), max_size=3))
def _fuzz_extra_vars(given_values):
    tried["-e values"] += 1
    try:
        result = parse_extra_vars(given_values)
    except TritonopsError as err:
        one_line(err)
        return
    accepted["-e values"] += 1
    assert isinstance(result, dict) and all(isinstance(key, str) for key in result)


def test_any_extra_vars_give_a_mapping_or_a_one_line_error():
    fuzzed("-e values", _fuzz_extra_vars, examples=300, accepted_share=0.05)


@FUZZ
@given(st.lists(ONE_EXTRA, max_size=3))
def _fuzz_valid_extra_vars(given):
    tried["valid -e values"] += 1
    expected: dict = {}
    for _, mapping in given:  # a later -e wins
        expected.update(mapping)
    assert parse_extra_vars([text for text, _ in given]) == expected
    accepted["valid -e values"] += 1


def test_name_value_pairs_and_json_mappings_give_exactly_what_they_say():
    fuzzed("valid -e values", _fuzz_valid_extra_vars, examples=300, accepted_share=1.0)


GOOD_SERVE = {"models": ["vllm_model"], "gpus": [0], "weights_dirs": ["/opt/tritonops/d/models/m"], "deadline_s": 300,
              "kv_cache_tokens": 1000}


def good_release(release_id: str, passed: bool = True) -> dict:
    return {"id": release_id, "created": release_id[:16], "image_id": "sha256:" + "a" * 64, "serve": dict(GOOD_SERVE),
            "models": ["vllm_model"], "gates": [{"passed": passed}]}


RELEASE = st.one_of(VALUE, st.builds(good_release, st.sampled_from(["20261201T000000Z-00000001",
                                                                    "20261201T000000Z-00000002"])),
                    st.builds(lambda base, key, value: {**base, key: value},
                              st.builds(good_release, st.just("20261201T000000Z-00000003")),
                              st.sampled_from(["serve", "gates", "image_id", "models", "id", "damaged"]), VALUE),
                    st.builds(lambda base, key, value: {**base, "serve": {**GOOD_SERVE, key: value}},
                              st.builds(good_release, st.just("20261201T000000Z-00000004")),
                              st.sampled_from(list(GOOD_SERVE)), VALUE))
# A listing as the host program writes it (in release order), current after every release in it.
LISTING = st.builds(lambda items: json.dumps({"releases": sorted(items, key=lambda r: r["id"]),
                                              "current": "releases/20261201T000000Z-00000009", "container": None},
                                             default=str),
                    st.lists(RELEASE.filter(lambda r: isinstance(r, dict) and isinstance(r.get("id"), str)),
                             min_size=1, max_size=4))
FACT = st.one_of(VALUE.map(lambda v: json.dumps(v, default=str)), st.text(max_size=30),
                 st.builds(lambda items, current: json.dumps({"releases": items, "current": current, "container": None},
                                                             default=str),
                           st.lists(RELEASE, max_size=4),
                           st.one_of(st.none(), WORD, st.just("releases/20261201T000000Z-00000009"))),
                 LISTING, LISTING)


@FUZZ
@given(stdout=FACT, to=st.one_of(st.none(), st.sampled_from(["20261201T000000Z-00000001",
                                                            "20261201T000000Z-00000003",
                                                            "20261201T000000Z-00000004"])))
def _fuzz_releases_read_back(stdout, to):
    tried["release.json read back"] += 1
    try:
        deployed = parse_releases(stdout, HOST_PORTS)
        target = rollback_target(deployed, to)
    except TritonopsError as err:
        one_line(err)
        return
    accepted["release.json read back"] += 1
    assert target.damaged is None and (to is not None or target.passed)
    if to is not None:
        assert target.id == to
    else:  # the newest release before current that served (of a listing in order, as the host program writes it)
        assert target.id < deployed.current
        ids = [r.id for r in deployed.releases]
        assert ids != sorted(ids) or not [r for r in deployed.releases if target.id < r.id < deployed.current
                                          and r.passed]
    if target.serve is not None:  # what a rollback would start: built without surprises
        step = serve_step("/opt/tritonops/d", "d", target.id, target.image_id or "", target.serve, ContainerSettings())
        assert step.spec.release == target.id


def test_releases_read_back_from_a_host_are_used_only_when_whole():
    fuzzed("release.json read back", _fuzz_releases_read_back, examples=300, accepted_share=0.03)


def run_releases_program(folder: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", releases.SOURCE, str(folder), "tritonops-fuzz-no-such-container"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_host_program_lists_damaged_release_files_as_damaged_and_the_others_whole(tmp_path):
    folder = tmp_path / "releases"
    whole = good_release("20261201T000000Z-0000000a")
    bodies = {
        "20261201T000000Z-0000000a": json.dumps({k: v for k, v in whole.items() if k != "id"}).encode(),
        "20261201T000000Z-0000000b": json.dumps(whole).encode()[:40],           # truncated
        "20261201T000000Z-0000000c": b"[1, 2, 3]",                                # not an object
        "20261201T000000Z-0000000d": b"\xff\xfe\x00garbage",                     # not text
        "20261201T000000Z-0000000e": json.dumps({"gates": "yes", "models": [1, {"name": 2}], "serve": []}).encode(),
        "20261201T000000Z-0000000f": b"{" * 100_000,                              # deeply nested
    }
    for name, body in bodies.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "release.json").write_bytes(body)
    os.symlink("releases/20261201T000000Z-0000000a", tmp_path / "current")
    deployed = parse_releases(json.dumps(run_releases_program(tmp_path)), HOST_PORTS)
    by_id = {r.id: r for r in deployed.releases}
    assert by_id["20261201T000000Z-0000000a"].damaged is None and by_id["20261201T000000Z-0000000a"].passed
    for name in ("b", "c", "d", "e", "f"):
        assert by_id[f"20261201T000000Z-0000000{name}"].damaged, name
        assert not by_id[f"20261201T000000Z-0000000{name}"].passed
    try:
        rollback_target(deployed, "20261201T000000Z-0000000e")
    except TritonopsError as err:
        assert "cannot be started: its release.json: serve is not a mapping" in str(err)
    else:
        raise AssertionError("a damaged release was chosen")
