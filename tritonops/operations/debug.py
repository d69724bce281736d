"""debug: Ansible's debug module for users' own roles: `msg` (any value) or `var` (a variable's name, or an
expression, evaluated over the host's variables when the task is compiled).

    - debug: {msg: "serving {{ app_version }} on {{ inventory_hostname }}"}
    - debug: {var: app_settings}

It changes nothing and reads nothing on the host: it is always `ok`, and what it says is the result's message
(the terminal, --json and the audit log show it, masked like every output). A `var` whose name says it holds a
secret (`*_token`, `*_password`, ...) shows as hidden, whatever its value.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Iterable

from pydantic import PrivateAttr, ValidationInfo, model_validator

from tritonops.facts.queries import Facts, Query
from tritonops.operations.base import Args
from tritonops.operations.steps import Step
from tritonops.redact import redact_value

DEFAULT_MSG = "Hello world!"  # Ansible's, when neither is given


class DebugArgs(Args):
    msg: Any = None
    var: str | None = None
    _said: str = PrivateAttr(default="")

    @model_validator(mode="after")
    def _what_it_says(self, info: ValidationInfo) -> "DebugArgs":
        if self.msg is not None and self.var is not None:
            raise ValueError("give msg or var, not both")
        if self.var is not None:
            if not self.var.strip() or "{{" in self.var:
                raise ValueError(f"var names a variable (or an expression) without {{{{ }}}}, not {self.var!r}")
            evaluate = (info.context or {}).get("evaluate")
            value = evaluate(self.var) if evaluate is not None else "(not evaluated outside a playbook)"
            self._said = f"{self.var}: {_text(redact_value(self.var, value))}"
        else:
            self._said = _text(DEFAULT_MSG if self.msg is None else self.msg)
        return self

    @property
    def said(self) -> str:
        return self._said


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


class DebugOperation:
    name: ClassVar[str] = "debug"
    Args: ClassVar[type[Args]] = DebugArgs

    def facts(self, args: DebugArgs) -> Iterable[Query]:
        return []

    def steps(self, args: DebugArgs, facts: Facts) -> Iterable[Step]:
        return []

    def message(self, args: DebugArgs) -> str:
        """What the task's result says (host_task.py asks an operation that has it)."""
        return args.said


debug = DebugOperation()
