"""Operations tested as data, the way pyinfra tests its operations: each file under
tests/cases/operations/<operation>/<case>.json holds the arguments, the facts the host would answer,
and the exact steps expected. No host is involved: operations are pure."""

import dataclasses
import json
import subprocess
import sys

import pytest

from tests.support import paths
from tests.support.rollout_plans import said
from tritonops import host_programs
from tritonops.errors import TritonopsError
from tritonops.operations.serve import ServeStep
from tritonops.facts.queries import CommandFact, DirFact, Facts, FileFact
from tritonops.playbook.known_operations import OPERATIONS, operation_named

CASES = sorted((paths.CASES / "operations").glob("*/*.json"))


def facts_of(data: dict) -> Facts:
    facts = [FileFact(path, **fact) for path, fact in data.get("files", {}).items()]
    for path, names in data.get("dirs", {}).items():
        facts.append(DirFact(path, False) if isinstance(names, dict) else DirFact(path, True, tuple(names)))
    facts += [CommandFact(argv_of(fact), **fact) for fact in map(dict, data.get("commands", []))]
    return Facts.of(*facts)


def argv_of(fact: dict) -> tuple[str, ...]:
    """A command fact's argv, written out or named: a host program and its arguments (`program`, `args`: its argv
    holds its whole source, not the case's point)."""
    if "program" in fact:
        return host_programs.argv(fact.pop("program"), *fact.pop("args", ()))
    return tuple(fact.pop("argv"))


def step_data(step) -> dict:
    if type(step).__module__ == "tritonops.weights.transfer":  # model_weights: what it does, then its fields
        return {"type": type(step).__name__, "describe": step.describe(),
                **{f.name: plain(getattr(step, f.name)) for f in dataclasses.fields(step) if f.repr}}
    if isinstance(step, ServeStep):  # what it does and how: the rollout's plan, each step in one line
        return {"type": "ServeStep", "describe": step.describe(), "plan": said(step.rollout.plan),
                "restarts_if_unhealthy": {str(i): [s.said() for s in p.steps]
                                          for i, p in sorted(step.rollout.restarts.items())},
                "diff": list(step.restarts)}
    data = {"type": type(step).__name__, **vars(step)}
    if isinstance(data.get("content"), bytes):
        data["content"] = data["content"].decode()
    if isinstance(data.get("argv"), tuple):  # as JSON has it
        data["argv"] = list(data["argv"])
    return data


def plain(value):
    """A step's field as JSON has it: dataclasses as objects, tuples as lists."""
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, (tuple, list)):
        return [plain(item) for item in value]
    return value


@pytest.mark.parametrize("case", CASES, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_operation_case(case):
    data = json.loads(case.read_text())
    operation = operation_named(case.parent.name)
    args = operation.Args.model_validate(data["args"], context=validation_context(data))
    if "error" in data:  # the host cannot be brought there: the operation says why
        with pytest.raises(TritonopsError) as caught:
            list(operation.steps(args, facts_of(data["facts"])))
        assert str(caught.value) == data["error"]
        return
    assert [step_data(step) for step in operation.steps(args, facts_of(data["facts"]))] == data["steps"]
    if "message" in data:  # an operation that says something of its own (debug)
        assert operation.message(args) == data["message"]


def validation_context(data: dict) -> dict:
    """What the playbook engine hands an operation's arguments while it checks them: the role's files and
    rendered templates (`controller`: "file:NAME" / "template:NAME" -> text), the host's variables (`vars`)."""
    files = data.get("controller", {})
    variables = data.get("vars", {})
    return {"lookup": lambda kind, name: files[f"{kind}:{name}"], "evaluate": lambda expression: variables[expression]}


def test_there_are_cases_for_every_builtin_file_operation():
    assert {path.parent.name for path in CASES} >= {"put_file", "directory", "symlink", "release"}


def test_there_are_cases_for_the_serving_operations():
    assert {path.parent.name for path in CASES} >= {"serve_release", "rollback_release"}


def test_there_are_cases_for_the_model_weights_operation_of_each_source_a_host_reads():
    kinds = {json.loads(path.read_text())["args"]["source"] for path in CASES if path.parent.name == "model_weights"}
    assert kinds >= {"huggingface", "modelscope", "host_path"}


def test_there_are_cases_for_every_operation_with_an_ansible_name():
    assert {path.parent.name for path in CASES} >= {"command", "copy", "template", "file", "debug"}


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_each_operation_a_task_can_name_is_found_by_its_import_path_under_that_name(name):
    assert operation_named(name).name == name


def test_finding_an_operation_imports_its_own_module_and_no_other_operation():
    """No registry imports every operation to fill itself: a playbook of file tasks loads neither the
    serve operation (the serving programs, the log shipping) nor the weights one."""
    modules = {path.partition(":")[0] for path in OPERATIONS.values()}
    script = ("import json, sys\n"
              "from tritonops.playbook.known_operations import operation_named\n"
              "operation_named('put_file')\n"
              f"print(json.dumps(sorted(set(sys.modules) & set({sorted(modules)!r}))))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["tritonops.operations.files"]
