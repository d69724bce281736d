"""Facts an operation asks for about a host's files and commands: queries (data) and their answers (data).

All of one task's queries are answered by one run of the fact program on the host (`query_program.py`,
a stdlib program fed on stdin, like the probe); `parse_answers` is the pure parser of its output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tritonops.errors import TritonopsError

TEXT_LIMIT = 1024 * 1024  # file contents up to this size come back (for --diff and JSON facts)


@dataclass(frozen=True)
class FileQuery:
    """What is at `path`: kind, size, mode, sha256, link target; the text when `content` and small."""

    path: str
    content: bool = False


@dataclass(frozen=True)
class DirQuery:
    """The names in the folder at `path` (empty when there is none)."""

    path: str


@dataclass(frozen=True)
class CommandQuery:
    """The exit code and output of an argument list run on the host (no shell), e.g. `docker image inspect`."""

    argv: tuple[str, ...]
    timeout_s: float = 60.0

    @property
    def path(self) -> str:  # how Facts finds it
        return " ".join(self.argv)


Query = FileQuery | DirQuery | CommandQuery


@dataclass(frozen=True)
class FileFact:
    path: str
    kind: str  # "missing" | "file" | "dir" | "link" | "other"
    size: int = 0
    mode: int = 0
    sha256: str | None = None
    link_target: str | None = None
    text: str | None = None  # for FileQuery(content=True): the UTF-8 text, if small enough
    owner: str | None = None  # of a file or folder: the user's name (its number when it has none)
    group: str | None = None

    @property
    def exists(self) -> bool:
        return self.kind != "missing"


@dataclass(frozen=True)
class DirFact:
    path: str
    exists: bool
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class CommandFact:
    argv: tuple[str, ...]
    exit_code: int
    stdout: str = ""
    stderr: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


Fact = FileFact | DirFact | CommandFact


class Facts:
    """The answers to one task's queries, looked up by path."""

    def __init__(self, answers: dict[Query, Fact] | None = None):
        self._answers = dict(answers or {})

    def file(self, path: str) -> FileFact:
        for query, fact in self._answers.items():
            if isinstance(query, FileQuery) and query.path == path:
                return fact
        raise KeyError(f"no file fact was asked for {path}")

    def dir(self, path: str) -> DirFact:
        for query, fact in self._answers.items():
            if isinstance(query, DirQuery) and query.path == path:
                return fact
        raise KeyError(f"no folder fact was asked for {path}")

    def command(self, argv: tuple[str, ...]) -> CommandFact:
        for query, fact in self._answers.items():
            if isinstance(query, CommandQuery) and query.argv == tuple(argv):
                return fact
        raise KeyError(f"no command fact was asked for {' '.join(argv)}")

    def covers(self, queries) -> bool:
        """Whether every one of `queries` has its answer here (a prefetch that can stand in for a read)."""
        return all(query in self._answers for query in queries)

    @classmethod
    def of(cls, *facts: Fact) -> "Facts":
        """For tests: facts given directly, keyed by the query that would have produced them."""
        answers: dict[Query, Fact] = {}
        for fact in facts:
            if isinstance(fact, CommandFact):
                query = CommandQuery(fact.argv)
            elif isinstance(fact, FileFact):
                query = FileQuery(fact.path, fact.text is not None)
            else:
                query = DirQuery(fact.path)
            answers[query] = fact
        return cls(answers)


def queries_json(queries: list[Query]) -> bytes:
    return json.dumps([_query_json(query) for query in queries]).encode()


def _query_json(query: Query) -> dict:
    if isinstance(query, CommandQuery):
        return {"kind": "command", "argv": list(query.argv), "timeout_s": query.timeout_s}
    return {"kind": "file" if isinstance(query, FileQuery) else "dir", "path": query.path,
            "content": getattr(query, "content", False), "text_limit": TEXT_LIMIT}


def parse_answers(queries: list[Query], output: str) -> Facts:
    """The host program's JSON answers (one per query, in order) -> Facts."""
    try:
        answers = json.loads(output)
    except ValueError:
        raise TritonopsError(f"the host's fact program answered something that is not JSON: {output[:120]!r}") from None
    if not isinstance(answers, list) or len(answers) != len(queries):
        raise TritonopsError("the host's fact program answered the wrong number of facts")
    return Facts({query: _fact(query, answer) for query, answer in zip(queries, answers)})


def _fact(query: Query, answer: Any) -> Fact:
    if not isinstance(answer, dict):
        raise TritonopsError(f"a fact about {query.path} is not an object")
    if isinstance(query, CommandQuery):
        return CommandFact(query.argv, int(answer.get("exit_code", 127)), str(answer.get("stdout", "")),
                           str(answer.get("stderr", "")))
    if isinstance(query, DirQuery):
        return DirFact(query.path, bool(answer.get("exists")), tuple(sorted(answer.get("names") or ())))
    return FileFact(query.path, str(answer.get("kind", "missing")), int(answer.get("size") or 0),
                    int(answer.get("mode") or 0), answer.get("sha256"), answer.get("link_target"),
                    answer.get("text"), answer.get("owner"), answer.get("group"))
