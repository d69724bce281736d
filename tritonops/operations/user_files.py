"""copy, template, file: Ansible's file modules for users' own roles, by their names and argument names (a subset).

    - copy: {src: motd, dest: /etc/motd, mode: "0644", owner: root, group: root}   # src: the role's files/
    - copy: {content: "hello\\n", dest: /etc/hello}
    - template: {src: app.conf.j2, dest: /etc/app.conf}                               # the role's templates/
    - file: {path: /srv/app, state: directory, mode: "0750", owner: app}
    - file: {path: /srv/app/current, state: link, src: /srv/app/releases/1}

`src` is read (and a template rendered over the host's variables) when the task is compiled, by the engine's
lookup('file' | 'template', src), handed to the arguments' validation as its context: a missing file or an
undefined variable is an error at the task's file:line before any host is touched. What reaches the host is
the text. Each compares with the host's facts (sha256, mode, owner, group, kind) and yields only the steps
still needed, all of them the existing file steps (PutFile, MakeDir, Symlink, Remove) or an argument list run
without a shell (chmod, chown, chgrp).
"""

from __future__ import annotations

import hashlib
from typing import ClassVar, Iterable, Literal

from pydantic import PrivateAttr, ValidationInfo, field_validator, model_validator

from tritonops.errors import TritonopsError
from tritonops.facts.queries import FileFact, Facts, FileQuery, Query
from tritonops.operations.base import Args
from tritonops.operations.host_values import account_name, host_path, octal_mode
from tritonops.operations.steps import MakeDir, PutFile, Remove, Run, Step, Symlink

NEW_FILE_MODE = 0o644
NEW_DIR_MODE = 0o755


class Attributes(Args):
    """mode, owner and group as Ansible's file modules take them; None leaves the host's as they are."""

    mode: int | None = None
    owner: str | None = None
    group: str | None = None

    _mode = field_validator("mode", mode="before")(octal_mode)
    _account = field_validator("owner", "group", mode="before")(account_name)


def controller_text(info: ValidationInfo, kind: str, name: str) -> str | None:
    """The text of `name` through the engine's lookup(kind, name) (the role's files/ or templates/, a template
    rendered over the host's variables); None where no engine gave one (arguments checked on their own)."""
    lookup = (info.context or {}).get("lookup")
    return None if lookup is None else lookup(kind, name)


def ownership_steps(path: str, current: FileFact, args: Attributes, *, rewritten: bool) -> list[Step]:
    """chown/chgrp where the host's owner or group differs (a file just rewritten is the writer's: set again)."""
    owner = args.owner if args.owner is not None and (rewritten or current.owner != args.owner) else None
    group = args.group if args.group is not None and (rewritten or current.group != args.group) else None
    if owner and group:
        return [Run(("chown", f"{owner}:{group}", path))]
    if owner:
        return [Run(("chown", owner, path))]
    if group:
        return [Run(("chgrp", group, path))]
    return []


def mode_steps(path: str, current: FileFact, mode: int | None) -> list[Step]:
    return [Run(("chmod", f"{mode:04o}", path))] if mode is not None and current.mode != mode else []


def text_steps(dest: str, text: str, args: Attributes, facts: Facts) -> Iterable[Step]:
    """The file at `dest` holding `text` (compared by sha256), with the mode, owner and group asked."""
    current = facts.file(dest)
    if current.kind not in ("file", "missing", "link"):
        raise TritonopsError(f"{dest} is a {'folder' if current.kind == 'dir' else current.kind}: name the file to "
                             "write (dest)")
    data = text.encode()
    if current.kind != "file" or current.sha256 != hashlib.sha256(data).hexdigest():
        mode = args.mode if args.mode is not None else current.mode if current.kind == "file" else NEW_FILE_MODE
        yield PutFile(dest, data, mode)
        yield from ownership_steps(dest, current, args, rewritten=True)
        return
    yield from mode_steps(dest, current, args.mode)
    yield from ownership_steps(dest, current, args, rewritten=False)


class CopyArgs(Attributes):
    dest: str
    src: str | None = None      # a file of the role's files/ (or files/ beside the playbook)
    content: str | None = None  # the text itself
    _text: str | None = PrivateAttr(default=None)

    _dest = field_validator("dest")(host_path)

    @model_validator(mode="after")
    def _source(self, info: ValidationInfo) -> "CopyArgs":
        if (self.src is None) == (self.content is None):
            raise ValueError("give one of src (a file of the role's files/) or content")
        self._text = self.content if self.src is None else controller_text(info, "file", self.src)
        return self


class CopyOperation:
    name: ClassVar[str] = "copy"
    Args: ClassVar[type[Args]] = CopyArgs

    def facts(self, args: CopyArgs) -> Iterable[Query]:
        return [FileQuery(args.dest, content=True)]

    def steps(self, args: CopyArgs, facts: Facts) -> Iterable[Step]:
        if args._text is None:
            raise TritonopsError(f"copy: src {args.src} was not read (arguments checked outside a playbook)")
        yield from text_steps(args.dest, args._text, args, facts)


class TemplateArgs(Attributes):
    src: str   # a template of the role's templates/ (or templates/ beside the playbook)
    dest: str
    _text: str | None = PrivateAttr(default=None)

    _dest = field_validator("dest")(host_path)

    @model_validator(mode="after")
    def _render(self, info: ValidationInfo) -> "TemplateArgs":
        self._text = controller_text(info, "template", self.src)
        return self


class TemplateOperation:
    name: ClassVar[str] = "template"
    Args: ClassVar[type[Args]] = TemplateArgs

    def facts(self, args: TemplateArgs) -> Iterable[Query]:
        return [FileQuery(args.dest, content=True)]

    def steps(self, args: TemplateArgs, facts: Facts) -> Iterable[Step]:
        if args._text is None:
            raise TritonopsError(f"template: {args.src} was not rendered (arguments checked outside a playbook)")
        yield from text_steps(args.dest, args._text, args, facts)


FileState = Literal["file", "directory", "absent", "link", "touch"]


class FileArgs(Attributes):
    path: str
    state: FileState = "file"
    src: str | None = None  # what a link points to (state: link)

    _path = field_validator("path")(host_path)

    @field_validator("src")
    @classmethod
    def _target(cls, value: str | None) -> str | None:
        if value is not None and (not value or any(ord(char) < 32 for char in value)):
            raise ValueError(f"must be a path without control characters, not {value!r}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "FileArgs":
        if (self.state == "link") != (self.src is not None):
            raise ValueError("src (what the link points to) goes with state: link, and only with it")
        if self.state in ("link", "absent") and (self.mode, self.owner, self.group) != (None, None, None):
            raise ValueError(f"state: {self.state} takes no mode, owner or group")
        return self


class FileOperation:
    name: ClassVar[str] = "file"
    Args: ClassVar[type[Args]] = FileArgs

    def facts(self, args: FileArgs) -> Iterable[Query]:
        return [FileQuery(args.path)]

    def steps(self, args: FileArgs, facts: Facts) -> Iterable[Step]:
        current = facts.file(args.path)
        kind = current.kind
        if args.state == "absent":
            if current.exists:
                yield Remove(args.path, recursive=True)
        elif args.state == "link":
            if kind not in ("missing", "link"):
                raise TritonopsError(f"{args.path} is a {_kind_word(kind)}, not a link: remove it first "
                                     "(file: state absent)")
            if kind == "missing" or current.link_target != args.src:
                yield Symlink(args.path, args.src or "")
        elif args.state == "directory":
            if kind not in ("missing", "dir"):
                raise TritonopsError(f"{args.path} is a {_kind_word(kind)}, not a folder")
            if kind == "missing":
                yield MakeDir(args.path, args.mode if args.mode is not None else NEW_DIR_MODE)
                if args.mode is not None:  # the host's umask may have taken bits off
                    yield Run(("chmod", f"{args.mode:04o}", args.path))
                yield from ownership_steps(args.path, current, args, rewritten=True)
            else:
                yield from _attribute_steps(args, current)
        elif args.state == "touch":
            if kind == "missing":
                yield PutFile(args.path, b"", args.mode if args.mode is not None else NEW_FILE_MODE)
                yield from ownership_steps(args.path, current, args, rewritten=True)
            elif kind in ("file", "dir"):
                yield from _attribute_steps(args, current)
            else:
                raise TritonopsError(f"{args.path} is a {_kind_word(kind)}: touch makes or keeps a file")
        else:  # state: file only sets the attributes of a file that is there, as Ansible's
            if kind != "file":
                raise TritonopsError(f"{args.path} is {'missing' if kind == 'missing' else 'a ' + _kind_word(kind)}: "
                                     "state: file only sets a file's mode and owner (copy or template writes one, "
                                     "state: touch makes an empty one)")
            yield from _attribute_steps(args, current)


def _attribute_steps(args: Attributes, current: FileFact) -> list[Step]:
    return mode_steps(current.path, current, args.mode) + ownership_steps(current.path, current, args,
                                                                            rewritten=False)


def _kind_word(kind: str) -> str:
    return {"dir": "folder", "link": "link", "file": "file"}.get(kind, "special file")


copy = CopyOperation()
template = TemplateOperation()
file = FileOperation()
