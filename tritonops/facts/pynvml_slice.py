"""nvidia-ml-py's `pynvml` cut down to what the probe program calls, for the bundle sent to each host.

The whole module is 8,000 lines, 350 kB: each host's Python spent ~0.14 s compiling and running it
(hundreds of ctypes structures and functions), a third of a probe's time on a lab host and the
largest share of a 64-host probe's CPU. The probe calls ~25 of its names.

What is kept, by top-level statement, as the original source text (comments between statements
dropped, nothing rewritten, so any Python that runs pynvml runs the slice):
- every statement that is not a definition or an assignment (imports, `try`/`if` blocks, calls);
- every `NVML_ERROR_*` constant: pynvml makes one exception class per constant it finds, and their
  names are what the probe reports (`NVMLError_GpuIsLost`);
- every definition or assignment of a name that a kept statement uses, to a fixed point.
A name used only through a string (getattr with a built name, globals()) would be missed: pynvml's
one such use is the NVML_ERROR_* scan above. tests/unit/facts/test_probe_speed_payload.py checks that every
global name the slice reads is defined in it.
"""

from __future__ import annotations

import ast

KEPT_PREFIXES = ("NVML_ERROR_",)


def probe_names(program_source: str, module_alias: str = "nvml") -> set[str]:
    """The pynvml names the probe program uses: `nvml.<name>`, and names written as strings
    (`getattr(nvml, "nvmlDeviceGetComputeRunningProcesses")`)."""
    names = set()
    for node in ast.walk(ast.parse(program_source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == module_alias:
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
    return names


def slice_module(source: str, wanted: set[str]) -> str:
    """The statements of `source` that define `wanted` and what those need, in their original order."""
    statements = ast.parse(source).body
    definers: dict[str, list[int]] = {}  # name -> the statements that bind it
    todo = []  # statements to keep whose names are not followed yet
    for index, statement in enumerate(statements):
        defines = _defined_names(statement)
        if defines is None or any(name.startswith(KEPT_PREFIXES) for name in defines):
            todo.append(index)
        for name in defines or ():
            definers.setdefault(name, []).append(index)
    todo += [index for name in wanted for index in definers.get(name, ())]
    kept: set[int] = set()
    while todo:
        index = todo.pop()
        if index in kept:
            continue
        kept.add(index)
        todo += [other for name in _used_names(statements[index]) for other in definers.get(name, ())]
    lines = source.splitlines(keepends=True)
    chosen: dict[int, None] = {}  # line numbers in order, each once (two statements may share a line)
    for index in sorted(kept):
        statement = statements[index]
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
        chosen.update(dict.fromkeys(range(first - 1, statement.end_lineno)))
    return "".join(lines[number] for number in chosen)


def _defined_names(statement: ast.stmt) -> set[str] | None:
    """The names a definition or assignment binds; None for any other statement (always kept)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}
    return None


def _used_names(statement: ast.stmt) -> set[str]:
    """Every name the statement mentions, and every identifier-like string in it (a conservative
    superset: a local variable or a field name that shares a global's name keeps that global)."""
    names = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
    return names
