"""YAML loading that remembers line numbers, so every structural error can say file:line."""

from __future__ import annotations

from typing import Any

import yaml

from tritonops.errors import InputError
from tritonops.values.files import FileReads, read_regular_text


class LinedMap(dict):
    """A YAML mapping that knows its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict

    def line_of(self, key: Any) -> int:
        return self.key_lines.get(key, self.line)


MAX_EXPANDED_VALUES = 1_000_000  # values after aliases are expanded: far above any real inventory


# libyaml's parser where PyYAML has it (its wheels do): ~5x faster than the pure-Python one, the same
# nodes, marks and errors. A 64-host inventory took ~0.1 s of every command's start with the other.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_SAFE_LOADER):
    def get_single_data(self):
        node = self.get_single_node()
        if node is None:
            return None
        _refuse_alias_bombs(node)
        return self.construct_document(node)


class _AliasFreeLoader(_LineLoader):
    """For a text without `*`, which can hold no alias: nothing to expand, no walk (~4 ms of a 64-host
    inventory)."""

    def get_single_data(self):
        return _SAFE_LOADER.get_single_data(self)


def _refuse_alias_bombs(root: yaml.Node) -> None:
    """Count the values the document stands for with its aliases expanded ("billion laughs"), each
    shared node counted once per use but walked once; a node that contains itself is refused too."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        children = _children(node)
        if children_done:
            in_progress.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[key] > MAX_EXPANDED_VALUES:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the document expands to more than {MAX_EXPANDED_VALUES:,} values through "
                    "its aliases (an alias bomb?)", node.start_mark)
            continue
        if key in sizes:
            continue
        if key in in_progress:
            raise yaml.constructor.ConstructorError(None, None, "an alias refers to a value that contains it",
                                                    node.start_mark)
        in_progress.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    return []


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> LinedMap:
    loader.flatten_mapping(node)
    mapping = LinedMap()
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark) from None
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = key_node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml_file(path: str, shown_as: str, reads: FileReads | None = None) -> Any:
    """Parse one YAML file (through `reads` when given: its first read); syntax errors become InputError at
    'shown_as:line'."""
    text = reads.text(path, shown_as, what="YAML file") if reads else read_regular_text(path, shown_as, what="YAML file")
    try:
        loader = _LineLoader if "*" in text else _AliasFreeLoader
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise InputError("YAML nested too deeply", shown_as) from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else 1
        problem = f"invalid YAML: {err.problem or err.context}"
        if err.context and err.context_mark and err.problem_mark and err.context_mark.line != err.problem_mark.line:
            problem += f" ({err.context} started at line {err.context_mark.line + 1})"
        if "!vault" in problem:
            # one with $ANSIBLE_VAULT data never gets here: that source is read by ansible-inventory (ansible_sources.py)
            problem = "a !vault value must be Ansible Vault data (ansible-vault encrypt_string writes it)"
        raise InputError(problem, f"{shown_as}:{line}") from None
    except yaml.YAMLError as err:
        raise InputError(f"invalid YAML: {err}", shown_as) from None


def plain(value: Any) -> Any:
    """The same value with LinedMaps turned back into plain dicts (for vars handed to others)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value
