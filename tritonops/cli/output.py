"""Where the CLI writes: rich tables for people, JSON for scripts, one-line errors.

rich is loaded when the first table or line is drawn, not on import: `--json` and `--help` never load it.

Everything printed is text, never markup: host names, messages and values from inventories may hold
`[...]`, `:smile:` or escape sequences, so the consoles have markup, emoji and highlighting off,
strings are stripped of control characters and escape sequences (`text.printable`) when rendered,
and styling is given as `styled(text, style)`. Every byte written passes `redact.redact_text`, so
no output path (tables, JSON, errors, notes) can carry a password or token.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from tritonops.text import printable, terminal_safe

if TYPE_CHECKING:
    from rich.text import Text

STATUS_STYLE = {"ok": "green", "changed": "yellow", "failed": "red", "unreachable": "magenta",
                "skipped": "cyan"}


def styled(text: Any, style: str = "") -> Text:
    """`text` shown literally (no markup), without control characters, in `style`."""
    from rich.text import Text

    return Text(printable(text, keep_newlines=True), style=style)


def status_text(status: str) -> Text:
    return styled(status, STATUS_STYLE.get(status, ""))


def line(*parts: Any) -> Text:
    """One line from plain strings and `styled(...)` parts."""
    from rich.text import Text

    return Text.assemble(*(part if isinstance(part, Text) else styled(part) for part in parts))


class _RedactingWriter:
    """The stream a console writes to: secrets masked and stray escape sequences dropped in every write."""

    def __init__(self, stream, hidden: set[str] | None = None):
        self._stream = stream
        self._hidden = hidden if hidden is not None else set()  # shared with Output.hide: grows during the run

    def write(self, text: str) -> int:
        from tritonops.redact import redact_literals, redact_text  # ~10 ms to compile: loaded when first needed

        return self._stream.write(terminal_safe(redact_text(redact_literals(text, self._hidden))))

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self):
        return getattr(self._stream, "encoding", "utf-8")


class Output:
    def __init__(self, json_mode: bool = False, verbosity: int = 0, file=None, err_file=None):
        self.json_mode = json_mode
        self.verbosity = verbosity
        self._stream = file or sys.stdout
        self._err_file = err_file
        self._console = None
        self._err_console = None
        self._hidden: set[str] = set()

    def hide(self, secret: str) -> None:
        """Mask this value in everything written from now on (a Vault value the inventory decrypted)."""
        self._hidden.add(str(secret))

    @property
    def console(self):
        if self._console is None:
            # Piped output (CI logs, `| less`) gets a wide table rather than rich's 80 columns.
            width = None if self._stream.isatty() else 200
            self._console = _text_console(_RedactingWriter(self._stream, self._hidden), soft_wrap=False, width=width)
        return self._console

    @property
    def err_console(self):
        if self._err_console is None:
            self._err_console = _text_console(_RedactingWriter(self._err_file or sys.stderr, self._hidden),
                                              stderr=self._err_file is None, soft_wrap=True)
        return self._err_console

    def print(self, *renderables: Any) -> None:
        self.console.print(*(_plain_text(item) for item in renderables))

    def json(self, data: Any) -> None:
        writer = _RedactingWriter(self._stream, self._hidden)
        writer.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
        writer.flush()

    def json_line(self, data: Any) -> None:
        """One JSON object on one line (JSON Lines: a stream a reader can take line by line)."""
        writer = _RedactingWriter(self._stream, self._hidden)
        writer.write(json.dumps(data, sort_keys=False) + "\n")
        writer.flush()

    def text_line(self, text: str) -> None:
        """One line of someone else's text (a log line) as it is, control characters escaped, unwrapped."""
        writer = _RedactingWriter(self._stream, self._hidden)
        writer.write(printable(text) + "\n")
        writer.flush()

    def info(self, text: Any) -> None:
        """Progress and notes: stderr, so --json output stays clean."""
        self.err_console.print(_plain_text(text))

    def error(self, text: str) -> None:
        self.err_console.print(line(styled("error:", "bold red"), " ", printable(text)))


def said(result) -> Text:
    """A result's message on a line of its own, under its table (a narrow column would wrap it word by word)."""
    return line(styled(result.host, "bold"), " ", status_text(result.status), ": ", result.msg)


def with_notes(table, notes: list):
    """`table`, and under it the `notes` lines (said(...)) when there are any."""
    if not notes:
        return table
    from rich.console import Group

    return Group(table, *notes)


def hosts_then_doors(results, host_table, door_table):
    """A reading command's hosts in `host_table(results)` and, when the run has balancers (rows of task "door"),
    their doors in `door_table(rows)` under it."""
    hosts = [result for result in results if result.task != "door"]
    doors = [result for result in results if result.task == "door"]
    if not doors:
        return host_table(hosts)
    from rich.console import Group

    return Group(host_table(hosts), door_table(doors))


def _text_console(file, **options):
    """A rich console that renders strings as plain text without control characters."""
    from rich.console import Console

    class _TextConsole(Console):
        def render_str(self, text: str, **kwargs):
            kwargs.update(markup=False, emoji=False, highlight=False)
            return super().render_str(printable(text, keep_newlines=True), **kwargs)

    return _TextConsole(file=file, markup=False, emoji=False, highlight=False, **options)


def _plain_text(item: Any) -> Any:
    from rich.text import Text

    if isinstance(item, Text) and item.plain != printable(item.plain, keep_newlines=True):
        return Text(printable(item.plain, keep_newlines=True), style=item.style)  # spans would no longer fit
    return item
