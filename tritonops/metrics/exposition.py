"""Prometheus' text exposition format (what Triton serves on :8002/metrics), parsed. Pure.

One parser for every reader: `status` takes the samples it knows and ignores the rest; `metrics`
refuses a page with any line that is neither a comment nor a sample ("garbage on the port").
Handles what the format allows and Triton writes: `# HELP`/`# TYPE` lines, labels with escaped
quotes, backslashes and newlines (commas and braces inside quotes), NaN/+Inf/-Inf, an optional
timestamp after the value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}


@dataclass(frozen=True)
class Sample:
    name: str
    labels: tuple[tuple[str, str], ...]  # sorted (name, value) pairs
    value: float

    def label(self, name: str, default: str | None = None) -> str | None:
        return dict(self.labels).get(name, default)


@dataclass(frozen=True)
class Exposition:
    samples: tuple[Sample, ...] = ()
    types: dict[str, str] = field(default_factory=dict)   # family name -> counter, gauge, histogram, ...
    errors: tuple[str, ...] = ()                           # "line N: why", for lines that are not the format

    def family(self, name: str) -> tuple[Sample, ...]:
        return tuple(sample for sample in self.samples if sample.name == name)


def parse_exposition(text: str) -> Exposition:
    samples, types, errors = [], {}, []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            words = line.split(None, 3)
            if len(words) >= 4 and words[1] == "TYPE":
                types[words[2]] = words[3].strip()
            continue
        try:
            samples.append(_sample(line))
        except ValueError as err:
            errors.append(f"line {number}: {err}")
    return Exposition(tuple(samples), types, tuple(errors))


def _sample(line: str) -> Sample:
    match = _NAME.match(line)
    if not match:
        raise ValueError(f"not a metric name: {_shown(line)}")
    name, rest = match.group(0), line[match.end():]
    labels: list[tuple[str, str]] = []
    if rest.startswith("{"):
        labels, rest = _labels(rest[1:])
    words = rest.split()
    if not words or len(words) > 2 or not rest[:1].isspace():
        raise ValueError(f"expected '<name>[{{labels}}] <value> [timestamp]': {_shown(line)}")
    value = _value(words[0], line)
    if len(words) == 2 and not re.fullmatch(r"-?[0-9]+", words[1]):
        raise ValueError(f"timestamp is not whole milliseconds: {_shown(line)}")
    return Sample(name, tuple(sorted(labels)), value)


def _labels(text: str) -> tuple[list[tuple[str, str]], str]:
    """Label pairs up to the closing brace, and what follows it."""
    labels, position = [], 0
    while True:
        while position < len(text) and text[position] in " ,":
            position += 1
        if text[position:position + 1] == "}":
            return labels, text[position + 1:]
        match = _LABEL_NAME.match(text, position)
        if not match or text[match.end():match.end() + 2] != '="':
            raise ValueError(f"bad label at {_shown(text[position:])}")
        value, position = _quoted(text, match.end() + 2)
        labels.append((match.group(0), value))


def _quoted(text: str, position: int) -> tuple[str, int]:
    out = []
    while position < len(text):
        char = text[position]
        if char == '"':
            return "".join(out), position + 1
        if char == "\\" and position + 1 < len(text):
            out.append(_ESCAPES.get(text[position + 1], "\\" + text[position + 1]))
            position += 2
            continue
        out.append(char)
        position += 1
    raise ValueError("a label value is not closed")


def _value(word: str, line: str) -> float:
    lowered = word.lower()
    if lowered in ("nan", "+inf", "inf", "-inf"):
        return float(lowered)
    try:
        value = float(word)
    except ValueError:
        raise ValueError(f"value is not a number: {_shown(line)}") from None
    if math.isinf(value) and "inf" not in lowered:
        raise ValueError(f"value out of range: {_shown(line)}")
    return value


def _shown(text: str) -> str:
    text = repr(text)
    return text if len(text) <= 80 else text[:77] + "..."
