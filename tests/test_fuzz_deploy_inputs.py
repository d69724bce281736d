"""Fuzzing what a deploy reads besides the inventory: playbooks and roles, -e values, and the
release.json files read back from hosts (tampered, truncated, not ours). Every input gives a result
or our typed one-line error, never another exception; a release read back damaged is never started."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzzcount import tried
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


@FUZZ
@given(plays=st.one_of(VALUE, st.lists(PLAY, max_size=3)), role_tasks=st.one_of(VALUE, st.lists(TASK, max_size=3)),
       role_defaults=VALUE)
def test_any_playbook_and_role_load_and_compile_or_fail_in_one_line(plays, role_tasks, role_defaults):
    tried["playbooks and roles"] += 1
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "roles" / "fuzzrole" / "tasks").mkdir(parents=True)
        (root / "roles" / "fuzzrole" / "defaults").mkdir(parents=True)
        (root / "roles" / "fuzzrole" / "tasks" / "main.yml").write_text(yaml.safe_dump(role_tasks))
        (root / "roles" / "fuzzrole" / "defaults" / "main.yml").write_text(yaml.safe_dump(role_defaults))
        (root / "play.yml").write_text(yaml.safe_dump(plays))
        (root / "hosts.yml").write_text("all:\n  hosts:\n    h1:\n      ansible_host: 10.0.0.1\n")
        try:
            compile_playbook(load_run_inputs(str(root / "play.yml"), [str(root / "hosts.yml")]))
        except TritonopsError as err:
            one_line(err)


EXTRA = st.one_of(WORD, st.text(max_size=40), VALUE.map(lambda v: json.dumps(v, default=str)),
                  st.builds(lambda k, v: f"{k}={v}", WORD, WORD),
                  st.builds(lambda k, v: "{" + f"{k}: {v}" + "}", WORD, WORD))


@FUZZ
@given(given_values=st.lists(EXTRA, max_size=3))
def test_any_extra_vars_give_a_mapping_or_a_one_line_error(given_values):
    tried["-e values"] += 1
    try:
        result = parse_extra_vars(given_values)
    except TritonopsError as err:
        one_line(err)
        return
    assert isinstance(result, dict) and all(isinstance(key, str) for key in result)


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
FACT = st.one_of(VALUE.map(lambda v: json.dumps(v, default=str)), st.text(max_size=30),
                 st.builds(lambda items, current: json.dumps({"releases": items, "current": current, "container": None},
                                                             default=str),
                           st.lists(RELEASE, max_size=4),
                           st.one_of(st.none(), WORD, st.just("releases/20261201T000000Z-00000009"))))


@FUZZ
@given(stdout=FACT, to=st.one_of(st.none(), st.sampled_from(["20261201T000000Z-00000001",
                                                            "20261201T000000Z-00000003",
                                                            "20261201T000000Z-00000004"])))
def test_releases_read_back_from_a_host_are_used_only_when_whole(stdout, to):
    tried["release.json read back"] += 1
    try:
        deployed = parse_releases(stdout)
        target = rollback_target(deployed, to)
    except TritonopsError as err:
        one_line(err)
        return
    assert target.damaged is None and (to is not None or target.passed)
    if target.serve is not None:  # what a rollback would start: built without surprises
        step = serve_step("/opt/tritonops/d", "d", target.id, target.image_id or "", target.serve, ContainerSettings())
        assert step.spec.release == target.id


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
    deployed = parse_releases(json.dumps(run_releases_program(tmp_path)))
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
