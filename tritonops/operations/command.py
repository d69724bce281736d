"""command: Ansible's command module for users' own roles, argv only (a subset).

    - command: {argv: [/usr/local/bin/app-migrate, --to, "{{ app_version }}"], creates: /srv/app/migrated}

The program and its arguments are a list, run without a shell (each one an argument of its own, whatever
it holds); a shell string (`command: make install`, `cmd:`) is refused at its file:line, pointing to argv.
`creates` skips it when that path exists on the host, `removes` when it does not; `chdir` runs it in that
folder (`env -C`). It is `changed` when it ran; in --check it does not run and says it would. A command that
exits non-zero fails the task with the end of its output.
"""

from __future__ import annotations

from typing import ClassVar, Iterable

from pydantic import Field, field_validator, model_validator

from tritonops.facts.queries import Facts, FileQuery, Query
from tritonops.operations.base import Args
from tritonops.operations.host_values import optional_host_path
from tritonops.operations.steps import Run, Step

ARGV_HINT = "give argv: [program, arg, ...], run without a shell (a shell string is neither split nor interpreted)"
SHELL_STRING = f"'command' takes no shell string: {ARGV_HINT}"


class CommandArgs(Args):
    argv: tuple[str, ...] = Field(min_length=1)
    chdir: str | None = None
    creates: str | None = None
    removes: str | None = None

    _paths = field_validator("chdir", "creates", "removes")(optional_host_path)

    @field_validator("argv", mode="before")
    @classmethod
    def _a_list(cls, value):
        if isinstance(value, str):
            raise ValueError(f"argv is a list, not a shell string: {ARGV_HINT}")
        if isinstance(value, (list, tuple)):  # a number is the text it was written as
            value = [str(item) if isinstance(item, (int, float)) and not isinstance(item, bool) else item
                     for item in value]
            if any(isinstance(item, str) and "\0" in item for item in value):
                raise ValueError("an argument holds a NUL character")
        return value


    @model_validator(mode="after")
    def _a_program(self) -> "CommandArgs":
        if self.chdir is not None and "=" in self.argv[0]:  # env would read it as a variable to set
            raise ValueError(f"with chdir, the program (argv's first item) cannot hold '=': {self.argv[0]!r}")
        return self


class CommandOperation:
    name: ClassVar[str] = "command"
    Args: ClassVar[type[Args]] = CommandArgs
    # how the loader answers a task that gives it a shell string instead of a mapping, or these arguments
    free_form: ClassVar[str] = SHELL_STRING
    refused_arguments: ClassVar[dict[str, str]] = {"cmd": ARGV_HINT, "_raw_params": ARGV_HINT,
                                                    "stdin": "'command' has no stdin here: not supported yet"}

    def facts(self, args: CommandArgs) -> Iterable[Query]:
        return [FileQuery(path) for path in (args.creates, args.removes) if path is not None]

    def steps(self, args: CommandArgs, facts: Facts) -> Iterable[Step]:
        if args.creates is not None and facts.file(args.creates).exists:
            return
        if args.removes is not None and not facts.file(args.removes).exists:
            return
        yield Run(("env", "-C", args.chdir, *args.argv) if args.chdir else args.argv)


command = CommandOperation()
