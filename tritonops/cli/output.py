"""Where the CLI writes: rich tables for people, JSON for scripts, one-line errors."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console


class Output:
    def __init__(self, json_mode: bool = False, verbosity: int = 0, file=None, err_file=None):
        self.json_mode = json_mode
        self.verbosity = verbosity
        stream = file or sys.stdout
        # Piped output (CI logs, `| less`) gets a wide table rather than rich's 80 columns.
        width = None if stream.isatty() else 200
        self.console = Console(file=stream, soft_wrap=False, width=width)
        self.err_console = Console(file=err_file or sys.stderr, stderr=err_file is None, soft_wrap=True)

    def print(self, *renderables: Any) -> None:
        self.console.print(*renderables)

    def json(self, data: Any) -> None:
        self.console.file.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
        self.console.file.flush()

    def info(self, text: str) -> None:
        """Progress and notes: stderr, so --json output stays clean."""
        self.err_console.print(text, highlight=False)

    def error(self, text: str) -> None:
        self.err_console.print(f"[bold red]error:[/] {text}", highlight=False, markup=True)
