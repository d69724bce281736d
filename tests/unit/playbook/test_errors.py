"""Every mistake in a playbook, role or variable is found before any host is touched, at its file:line."""

from __future__ import annotations

import os
import textwrap

import pytest

from tritonops.errors import InputError
from tritonops.playbook import PlaybookError, compile_playbook, load_run_inputs, run_playbook
from tritonops.transport.sessions import SessionPool

INVENTORY = """\
all:
  vars:
    ansible_connection: local
  hosts:
    h1:
      only_h1: hello
    h2:
"""

ROLE_TASKS = """\
- name: role file
  put_file:
    path: "{{ root }}/{{ inventory_hostname }}/role.txt"
    content: "{{ lookup('template', 'conf.j2') }}"
"""


def write(tmp_path, files: dict[str, str]) -> None:
    for name, text in {"inventory.yml": INVENTORY, **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def attempt(tmp_path, playbook: str, **files):
    """Load, compile and (only if both pass) run; the error, and nothing may have been written."""
    write(tmp_path, {"site.yml": playbook, **{name.replace("__", "/"): text for name, text in files.items()}})
    root = tmp_path / "out"
    root.mkdir()
    with pytest.raises(InputError) as caught:
        compiled = compile_playbook(load_run_inputs(str(tmp_path / "site.yml"), [str(tmp_path / "inventory.yml")],
                                                    extra_vars={"root": str(root)}))
        with SessionPool(compiled.connections) as pool:
            run_playbook(compiled, pool)
    assert os.listdir(root) == [], "a host was touched before the error was found"
    return caught.value


def task(body: str, extra: str = "") -> str:
    return "- hosts: all\n  tasks:\n" + textwrap.indent(textwrap.dedent(body), "    ") + extra


def where(err) -> str:
    return err.where.rsplit("/", 1)[-1]


def test_an_unknown_play_key_is_named_with_a_suggestion(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  taks: []\n")
    assert where(err) == "site.yml:2" and "unknown key 'taks' in a play; did you mean tasks" in err.what
    assert isinstance(err, PlaybookError) and err.exit_code == 5


def test_an_unknown_task_key_is_a_typo_of_a_keyword(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: x
          put_file: {path: /tmp/x, content: x}
          notfy: restart
        """))
    assert where(err) == "site.yml:5" and "unknown key 'notfy' in a task; did you mean notify?" in err.what


def test_an_unknown_operation_suggests_the_known_one(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: x
          put_fiel: {path: /tmp/x, content: x}
        """))
    assert where(err) == "site.yml:4" and "unknown operation 'put_fiel'; did you mean put_file?" in err.what


def test_a_task_names_exactly_one_operation(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: two
          directory: {path: /tmp/x}
          symlink: {path: /tmp/y, target: x}
        """))
    assert where(err) == "site.yml:5" and "names 2: directory, symlink" in err.what
    (tmp_path / "b").mkdir()
    err = attempt(tmp_path / "b", task("- name: none\n"))
    assert where(err) == "site.yml:3" and "a task names one operation" in err.what


def test_a_missing_argument_is_named(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: half
          put_file:
            path: "{{ root }}/x"
        """))
    assert where(err) == "site.yml:4" and "'put_file' needs the argument 'content'" in err.what


def test_an_unknown_argument_is_named_at_its_line(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: typo
          put_file:
            path: "{{ root }}/x"
            contnet: hello
        """))
    assert where(err) == "site.yml:6" and "'put_file' has no argument 'contnet'; did you mean content?" in err.what


def test_an_argument_of_the_wrong_type_after_rendering(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: mode
          put_file:
            path: "{{ root }}/x"
            content: x
            mode: "{{ [1, 2] }}"
        """))
    assert where(err) == "site.yml:7" and "argument 'mode'" in err.what and "[1, 2]" in err.what


def test_a_jinja_syntax_error_is_found_even_in_a_task_that_would_be_skipped(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: broken
          put_file:
            path: "{{ root }}/x"
            content: "{{ foo( }}"
          when: false
        """))
    assert where(err) == "site.yml:6" and "Jinja syntax error" in err.what


def test_an_undefined_variable_names_the_host_and_suggests(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: greet
          put_file:
            path: "{{ root }}/{{ inventory_hostname }}"
            content: "{{ only_h2 }}"
        """))
    assert where(err) == "site.yml:6"
    assert "'only_h2' is undefined; did you mean only_h1?" in err.what and "host h1" in err.what


def test_a_variable_defined_for_one_host_only_fails_before_the_other_host_is_touched(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: per host
          put_file:
            path: "{{ root }}/{{ inventory_hostname }}"
            content: "{{ only_h1 }}"
        """))
    assert "host h2" in err.what and where(err) == "site.yml:6"


def test_a_false_when_needs_no_variables(tmp_path):
    write(tmp_path, {"site.yml": task("""\
        - name: h1 only
          put_file:
            path: "{{ root }}/{{ inventory_hostname }}"
            content: "{{ only_h1 }}"
          when: inventory_hostname == 'h1'
        """)})
    compiled = compile_playbook(load_run_inputs(str(tmp_path / "site.yml"), [str(tmp_path / "inventory.yml")],
                                                extra_vars={"root": str(tmp_path)}))
    assert compiled.plays[0].tasks[0].hosts["h2"].skipped


@pytest.mark.parametrize("condition, message", [
    ("'{{ x }}'", "write it without {{ }}"),
    ("x ==", "Jinja syntax error"),
    ("nope", "'nope' is undefined"),
])
def test_bad_conditions(tmp_path, condition, message):
    err = attempt(tmp_path, task(f"""\
        - name: cond
          directory: {{path: /tmp/never}}
          when: {condition}
        """))
    assert where(err) == "site.yml:5" and message in err.what


def test_a_notified_handler_must_exist(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: config
          put_file: {path: /tmp/never, content: x}
          notify: restart ap
        """, "\n  handlers:\n    - name: restart app\n      directory: {path: /tmp/never}\n"))
    assert where(err) == "site.yml:3" and "notifies 'restart ap'" in err.what and "did you mean restart app" in err.what


def test_a_missing_role_suggests_the_one_that_exists(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  roles: [ap]\n", roles__app__tasks__main_yml="[]")
    assert where(err) == "site.yml:2" and "no role named 'ap'" in err.what


def test_a_role_template_error_points_into_the_template(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  roles: [app]\n",
                  **{"roles__app__tasks__main.yml": ROLE_TASKS,
                     "roles__app__templates__conf.j2": "line one\nport={{ app_prot }}\n",
                     "roles__app__defaults__main.yml": "app_port: 80\n"})
    assert err.where.endswith("roles/app/templates/conf.j2:2")
    assert "'app_prot' is undefined; did you mean app_port?" in err.what


def test_a_role_template_syntax_error_points_into_the_template(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  roles: [app]\n",
                  **{"roles__app__tasks__main.yml": ROLE_TASKS, "roles__app__templates__conf.j2": "a\n\n{% if %}\n"})
    assert err.where.endswith("roles/app/templates/conf.j2:3") and "Jinja syntax error" in err.what


def test_a_missing_template_is_named(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  roles: [app]\n",
                  **{"roles__app__tasks__main.yml": ROLE_TASKS, "roles__app__templates__conf.yml.j2": "x"})
    assert where(err) == "main.yml:1" and "lookup('template', 'conf.j2'): no such file" in err.what


def test_an_unknown_tritonops_variable_in_role_defaults_is_caught_at_its_line(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  roles: [app]\n",
                  **{"roles__app__tasks__main.yml": "[]",
                     "roles__app__defaults__main.yml": "a: 1\ntritonops_modle: x\n"})
    assert err.where.endswith("roles/app/defaults/main.yml:2") and "did you mean tritonops_model" in err.what
    assert err.exit_code == 5


def test_an_unknown_tritonops_variable_in_play_vars(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  vars:\n    tritonops_rooot: /x\n  tasks: []\n")
    assert where(err) == "site.yml:3" and "did you mean tritonops_root" in err.what and err.exit_code == 5


def test_role_vars_are_refused_not_ignored(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  roles: [app]\n",
                  **{"roles__app__tasks__main.yml": "[]", "roles__app__vars__main.yml": "a: 1\n"})
    assert err.where.endswith("roles/app/vars/main.yml:1") and "role vars are not supported" in err.what


def test_a_host_pattern_naming_no_group_is_an_error_at_the_play(tmp_path):
    err = attempt(tmp_path, "- name: p\n  hosts: webz\n  tasks: []\n")
    assert where(err) == "site.yml:2" and "no host or group named 'webz'" in err.what


def test_a_variable_that_refers_to_itself(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  vars:\n    a: '{{ b }}'\n    b: '{{ a }}'\n" + task("""\
        - name: x
          put_file: {path: "{{ root }}/x", content: "{{ a }}"}
        """).split("\n", 1)[1])
    assert "refers to itself" in err.what and where(err) in ("site.yml:3", "site.yml:4")


def test_a_loop_must_be_a_list(tmp_path):
    err = attempt(tmp_path, task("""\
        - name: x
          put_file: {path: "{{ root }}/{{ item }}", content: x}
          loop: "{{ 'abc' }}"
        """))
    assert where(err) == "site.yml:5" and "'loop' must give a list" in err.what


def test_yaml_syntax_errors_carry_their_line(tmp_path):
    err = attempt(tmp_path, "- hosts: all\n  tasks:\n    - name: [unclosed\n")
    assert where(err) == "site.yml:4" and "invalid YAML" in err.what and err.exit_code == 5
