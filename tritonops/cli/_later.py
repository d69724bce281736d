"""Commands that a later release provides: they say so, with exit code 2."""

from __future__ import annotations

from tritonops.errors import NotYetAvailable


def register_later(subparsers, common, name: str, help_text: str, issue_hint: str) -> None:
    parser = subparsers.add_parser(name, parents=[common], help=f"{help_text} (not yet available)")

    def run(args, out) -> int:
        raise NotYetAvailable(f"'tritonops {name}' is not yet available in this version ({issue_hint})")

    parser.set_defaults(run=run)
