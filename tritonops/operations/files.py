"""put_file, directory, symlink: the file operations every role uses."""

from __future__ import annotations

import hashlib
from typing import ClassVar, Iterable

from pydantic import field_validator

from tritonops.facts.queries import Facts, FileQuery, Query
from tritonops.operations.base import Args
from tritonops.operations.steps import MakeDir, PutFile, Step, Symlink


def octal_text(mode):
    """'0640' (a quoted YAML value) is octal, as chmod reads it; an unquoted 0640 YAML already made octal."""
    if isinstance(mode, str):
        try:
            return int(mode, 8)
        except ValueError:
            raise ValueError(f"mode {mode!r} is not an octal file mode") from None
    return mode


class PutFileArgs(Args):
    path: str
    content: str
    mode: int = 0o644

    _octal_text = field_validator("mode", mode="before")(octal_text)


class PutFileOperation:
    name: ClassVar[str] = "put_file"
    Args: ClassVar[type[Args]] = PutFileArgs

    def facts(self, args: PutFileArgs) -> Iterable[Query]:
        return [FileQuery(args.path, content=True)]

    def steps(self, args: PutFileArgs, facts: Facts) -> Iterable[Step]:
        current = facts.file(args.path)
        data = args.content.encode()
        if current.kind != "file" or current.sha256 != hashlib.sha256(data).hexdigest() or current.mode != args.mode:
            yield PutFile(args.path, data, args.mode)


class DirectoryArgs(Args):
    path: str
    mode: int = 0o755

    _octal_text = field_validator("mode", mode="before")(octal_text)


class DirectoryOperation:
    name: ClassVar[str] = "directory"
    Args: ClassVar[type[Args]] = DirectoryArgs

    def facts(self, args: DirectoryArgs) -> Iterable[Query]:
        return [FileQuery(args.path)]

    def steps(self, args: DirectoryArgs, facts: Facts) -> Iterable[Step]:
        if facts.file(args.path).kind != "dir":
            yield MakeDir(args.path, args.mode)


class SymlinkArgs(Args):
    path: str
    target: str


class SymlinkOperation:
    name: ClassVar[str] = "symlink"
    Args: ClassVar[type[Args]] = SymlinkArgs

    def facts(self, args: SymlinkArgs) -> Iterable[Query]:
        return [FileQuery(args.path)]

    def steps(self, args: SymlinkArgs, facts: Facts) -> Iterable[Step]:
        current = facts.file(args.path)
        if current.kind != "link" or current.link_target != args.target:
            yield Symlink(args.path, args.target)


put_file = PutFileOperation()
directory = DirectoryOperation()
symlink = SymlinkOperation()
