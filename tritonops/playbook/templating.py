"""Jinja for playbooks: task arguments and `when` rendered over a host's variables, strictly.

- StrictUndefined: an undefined variable is an error naming the file:line of the value (and a
  did-you-mean), never an empty string.
- A value that is exactly one `{{ expr }}` keeps the expression's own type (int, list, dict),
  like Ansible; anything else renders to text.
- Variables are rendered lazily when a template reads them (a role default may say
  `"{{ tritonops_root }}/models"`); a variable that refers to itself is an error.
- The environment is sandboxed: templates read variables, they do not call into Python.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.parser import Parser
from jinja2.sandbox import SandboxedEnvironment

from tritonops.errors import InputError
from tritonops.playbook.filters import FILTERS
from tritonops.playbook.model import PlaybookError

ENV = SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
ENV.filters.update(FILTERS)

_SINGLE_EXPRESSION = re.compile(r"^\{\{(?P<expr>(?:(?!\{\{|\}\}).)*)\}\}\Z", re.DOTALL)
_UNDEFINED_NAME = re.compile(r"^'([^']+)' is undefined$")


def is_template(text: str) -> bool:
    return "{{" in text or "{%" in text or "{#" in text


def check_syntax(value: Any, where: str) -> None:
    """Compile every template in `value` (nested lists and dicts too), so a syntax error is found at load."""
    if isinstance(value, str):
        if is_template(value):
            _compiled(value, where)
    elif isinstance(value, dict):
        for item in value.values():
            check_syntax(item, where)
    elif isinstance(value, list):
        for item in value:
            check_syntax(item, where)


def check_expression(text: str, where: str) -> None:
    _compiled_expression(text, where)


class Scope(Mapping):
    """A host's variables as Jinja sees them: values rendered on first read, then kept."""

    def __init__(self, values: Mapping[str, Any], wheres: Mapping[str, str], *, raw: Mapping[str, Any] | None = None,
                 parent: "Scope | None" = None):
        """`values` are rendered when read; `raw` ones (facts, names) are data and never rendered."""
        self._values = dict(values)
        self._wheres = dict(wheres)
        self._parent = parent
        self._rendered: dict[str, Any] = dict(raw or {})
        self._values.update(dict.fromkeys(raw or {}))
        self._resolving: list[str] = []

    def child(self, values: Mapping[str, Any], where: str) -> "Scope":
        """A scope with `values` on top (e.g. `item`, `lookup`), reading everything else from this one."""
        return Scope({}, {}, raw=values, parent=self)

    def __contains__(self, name: object) -> bool:
        return name in self._values or (self._parent is not None and name in self._parent) or name in ENV.globals

    def __getitem__(self, name: str) -> Any:
        if name not in self._values:
            if self._parent is not None and name in self._parent:
                return self._parent[name]
            return ENV.globals[name]
        if name in self._rendered:
            return self._rendered[name]
        where = self._wheres.get(name, "")
        if name in self._resolving:
            chain = " -> ".join(self._resolving[self._resolving.index(name):] + [name])
            raise PlaybookError(f"variable '{name}' refers to itself ({chain})", where)
        self._resolving.append(name)
        try:
            value = render(self._values[name], self, where)
        finally:
            self._resolving.pop()
        self._rendered[name] = value
        return value

    def __iter__(self) -> Iterator[str]:
        names = dict.fromkeys(self._values)
        if self._parent is not None:
            names.update(dict.fromkeys(self._parent))
        return iter(names)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def copy(self) -> dict[str, Any]:
        """The values as written, nothing rendered (Jinja copies a context's variables into the
        traceback of a failed template; rendering them there could fail again)."""
        copied = self._parent.copy() if self._parent is not None else {}
        copied.update(self._values)
        copied.update(self._rendered)
        return copied


def render(value: Any, scope: Scope, where: str) -> Any:
    """`value` with every string rendered as a template (lists and dicts walked; keys kept)."""
    if isinstance(value, str):
        return render_text(value, scope, where) if is_template(value) else value
    if isinstance(value, dict):
        return {key: render(item, scope, where) for key, item in value.items()}
    if isinstance(value, list):
        return [render(item, scope, where) for item in value]
    return value


def render_text(text: str, scope: Scope, where: str) -> Any:
    single = _SINGLE_EXPRESSION.match(text)
    if single:
        return evaluate(single.group("expr"), scope, where)
    return _guarded(lambda: _render_template(_compiled(text, where), scope), text, scope, where)


def render_file(source: str, shown_as: str, scope: Scope) -> str:
    """A template file's text rendered over `scope`; errors name the template file and line."""
    template = _compiled(source, shown_as, filename=shown_as)
    return _guarded(lambda: _render_template(template, scope), shown_as, scope, shown_as, filename=shown_as)


def evaluate(expression: str, scope: Scope, where: str) -> Any:
    """A bare Jinja expression (a `when`, the inside of `{{ }}`) -> its value, type kept."""
    template = _compiled_expression(expression, where)

    def run() -> Any:
        context = template.new_context(scope, shared=True)
        for _ in template.root_render_func(context):
            pass
        return _defined(context.vars["result"])

    return _guarded(run, expression, scope, where)


def _render_template(template: jinja2.Template, scope: Scope) -> str:
    context = template.new_context(scope, shared=True)
    try:
        return "".join(template.root_render_func(context))
    except Exception:
        ENV.handle_exception()  # re-raises with the template's own lines in the traceback
        raise


def _defined(value: Any) -> Any:
    """Raise for an undefined value anywhere inside `value` (a list holding one is not a value)."""
    if isinstance(value, jinja2.Undefined):
        str(value)  # StrictUndefined raises UndefinedError naming the variable
    elif isinstance(value, dict):
        for item in value.values():
            _defined(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _defined(item)
    return value


def _guarded(run, text: str, scope: Scope, where: str, *, filename: str | None = None) -> Any:
    """Run a render; any failure becomes one PlaybookError at `where` (a template file's line when known)."""
    try:
        return run()
    except PlaybookError:
        raise
    except InputError as err:  # a lookup's file that cannot be read
        raise PlaybookError(err.what, err.where) from None
    except Exception as err:
        shown = f"in {filename}" if filename else f"in {_short(text)}"
        line = _template_line(err.__traceback__, filename) if filename else None
        at = f"{filename}:{line}" if line else where
        if isinstance(err, jinja2.UndefinedError):
            raise PlaybookError(f"{err}{_did_you_mean(str(err), scope)} ({shown})", at) from None
        if isinstance(err, jinja2.TemplateSyntaxError):
            raise PlaybookError(f"Jinja syntax error: {err.message} ({shown})", at) from None
        if isinstance(err, jinja2.TemplateError):
            raise PlaybookError(f"{err} ({shown})", at) from None
        # a filter given the wrong type, a division by zero: the template's fault, not a crash
        raise PlaybookError(f"cannot render ({shown}): {type(err).__name__}: {err}", at) from None


def _did_you_mean(message: str, scope: Scope) -> str:
    import difflib

    match = _UNDEFINED_NAME.match(message)
    if not match:
        return ""
    close = difflib.get_close_matches(match.group(1), [name for name in scope if name not in ENV.globals], n=3,
                                      cutoff=0.7)
    return f"; did you mean {', '.join(close)}?" if close else ""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= 80 else text[:77] + "...")


@functools.lru_cache(maxsize=4096)
def _compiled_cached(text: str, filename: str | None) -> jinja2.Template:
    code = ENV.compile(text, name=filename, filename=filename)
    return ENV.template_class.from_code(ENV, code, ENV.make_globals(None), None)


def _compiled(text: str, where: str, *, filename: str | None = None) -> jinja2.Template:
    try:
        return _compiled_cached(text, filename)
    except jinja2.TemplateSyntaxError as err:
        if filename:
            raise PlaybookError(f"Jinja syntax error: {err.message}", f"{filename}:{err.lineno}") from None
        raise PlaybookError(f"Jinja syntax error: {err.message} (in {_short(text)})", where) from None


@functools.lru_cache(maxsize=4096)
def _expression_cached(text: str) -> jinja2.Template:
    parser = Parser(ENV, text, state="variable")
    expression = parser.parse_expression()
    if not parser.stream.eos:
        raise jinja2.TemplateSyntaxError(f"unexpected {parser.stream.current.value!r} after the expression",
                                         parser.stream.current.lineno)
    body = [nodes.Assign(nodes.Name("result", "store"), expression, lineno=1)]
    return ENV.from_string(nodes.Template(body, lineno=1))


def _compiled_expression(text: str, where: str) -> jinja2.Template:
    try:
        return _expression_cached(text)
    except jinja2.TemplateSyntaxError as err:
        raise PlaybookError(f"Jinja syntax error: {err.message} (in {_short(text)})", where) from None


def _template_line(tb, filename: str) -> int | None:
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
