"""The operations a task can name (`- name: ...\n  put_file: {...}`), each by the import path of the
object that carries it out. Adding one is one line in OPERATIONS.

Like pyinfra, which resolves an operation by its import path, the engine imports only the module of
an operation a task names, when it needs it; an operation module imports nothing of the engine and
no module imports every operation to fill a registry (operations live in operations/ and in the
packages they belong to, e.g. weights/).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tritonops.errors import InputError
from tritonops.text import close_matches

if TYPE_CHECKING:
    from tritonops.operations.base import Operation

OPERATIONS: dict[str, str] = {  # the name a task uses -> "module:attribute"
    "put_file": "tritonops.operations.files:put_file",
    "directory": "tritonops.operations.files:directory",
    "symlink": "tritonops.operations.files:symlink",
    "release": "tritonops.operations.release:release",
    "deployment_index": "tritonops.operations.deployment_index:deployment_index",
    "image_present": "tritonops.operations.image:image_present",
    "serve_release": "tritonops.operations.serve:serve_release",
    "rollback_release": "tritonops.operations.serve:rollback_release",
    "model_weights": "tritonops.weights.operation:model_weights",
    # Ansible's names, for users' own roles (docs/roles.md)
    "command": "tritonops.operations.command:command",
    "copy": "tritonops.operations.user_files:copy",
    "template": "tritonops.operations.user_files:template",
    "file": "tritonops.operations.user_files:file",
    "debug": "tritonops.operations.debug:debug",
}


def operation_named(name: str, where: str | None = None) -> Operation:
    if name not in OPERATIONS:
        close = close_matches(name, list(OPERATIONS), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(sorted(OPERATIONS))}"
        raise InputError(f"unknown operation '{name}'{hint}", where)
    module, _, attribute = OPERATIONS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
