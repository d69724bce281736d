"""Templates over host variables: native single expressions, lazy variables, filters; -e parsing."""

from __future__ import annotations

import json

import pytest

from tritonops.errors import InputError
from tritonops.playbook import PlaybookError, parse_extra_vars
from tritonops.playbook.templating import Scope, evaluate, render

SCOPE = Scope({"port": 8000, "gpus": [0, 1], "engine": {"tp": 2}, "root": "/opt/tritonops",
               "models": "{{ root }}/models", "name": "llama"}, {"port": "inv.yml:3"})


@pytest.mark.parametrize("template, value", [
    ("{{ port }}", 8000),
    ("{{ gpus }}", [0, 1]),
    ("{{ engine }}", {"tp": 2}),
    ("{{ port + 1 }}", 8001),
    ("{{ port }}\n", "8000\n"),
    (" {{ port }}", " 8000"),
    ("port={{ port }}", "port=8000"),
    ("{{ port }}{{ port }}", "80008000"),
    ("{{ models }}/{{ name }}", "/opt/tritonops/models/llama"),
    ("{{ engine | to_json }}", '{"tp": 2}'),
    ("{{ 'yes' | bool }}", True),
    ("no braces", "no braces"),
])
def test_a_single_expression_keeps_its_type_anything_else_is_text(template, value):
    assert render(template, SCOPE, "t:1") == value


def test_nested_arguments_are_rendered_and_keys_kept():
    assert render({"a": ["{{ port }}", {"{{ k }}": "{{ name }}"}], "n": 3}, SCOPE, "t:1") == \
        {"a": [8000, {"{{ k }}": "llama"}], "n": 3}


def test_conditions_are_bare_expressions():
    assert evaluate("port > 80 and 'llama' in name", SCOPE, "t:1") is True
    assert evaluate("gpus | length == 3", SCOPE, "t:1") is False


def test_the_sandbox_refuses_python_internals():
    with pytest.raises(PlaybookError, match="unsafe"):
        render("{{ name.__class__.__mro__ }}", SCOPE, "t:1")


def test_an_undefined_attribute_is_an_error_not_an_empty_string():
    with pytest.raises(PlaybookError) as err:
        render("{{ engine.pp }}", SCOPE, "site.yml:9")
    assert err.value.where == "site.yml:9" and "no attribute 'pp'" in err.value.what


def test_extra_vars_pairs_are_strings_later_wins():
    assert parse_extra_vars(["a=1 b='two words'", "a=3"]) == {"a": "3", "b": "two words"}
    assert parse_extra_vars(["url=http://x/?q=1"]) == {"url": "http://x/?q=1"}


def test_extra_vars_from_a_file_and_inline_mappings_keep_types(tmp_path):
    (tmp_path / "vars.yml").write_text("port: 9000\ngpus: [0, 1]\n")
    assert parse_extra_vars([f"@{tmp_path / 'vars.yml'}", '{"tp": 2}']) == {"port": 9000, "gpus": [0, 1], "tp": 2}


def test_an_inline_json_mapping_is_read_as_json():
    # json.dumps escapes a character beyond the BMP as a surrogate pair, which YAML reads as two lone surrogates
    assert parse_extra_vars([json.dumps({"prompt": "hi \U0001F600", "tp": 2})]) == {"prompt": "hi \U0001F600", "tp": 2}
    assert parse_extra_vars(["{tp: 2, gpus: [0, 1]}"]) == {"tp": 2, "gpus": [0, 1]}  # YAML flow, as before


@pytest.mark.parametrize("bad", ["novalue", "1a=2", "a-b=1", "{not: [closed}", "[1, 2]"])
def test_extra_vars_that_cannot_be_read_are_input_errors(bad):
    with pytest.raises(InputError):
        parse_extra_vars([bad])


def test_an_extra_vars_file_must_be_a_mapping(tmp_path):
    (tmp_path / "vars.yml").write_text("- a\n")
    with pytest.raises(InputError) as err:
        parse_extra_vars([f"@{tmp_path / 'vars.yml'}"])
    assert err.value.where.endswith("vars.yml:1")
