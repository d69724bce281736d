"""`tritonops releases`: every release kept on each host, newest first (tritonops.reading.releases)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tritonops.cli.commands import COMMANDS
from tritonops.cli.cmd_deploy import add_reading_options, reading_inputs, show_host_results
from tritonops.cli.output import line, status_text, styled

if TYPE_CHECKING:
    from rich.table import Table

GATE_STYLES = {"passed": "green", "failed": "red", "damaged": "red", "not gated": "yellow"}


def register(subparsers, common) -> None:
    parser = subparsers.add_parser(
        "releases", parents=[common], help=COMMANDS["releases"],
        description="Every release kept on each host, newest first: its id, when and by whom (user@controller) "
                    "it was made, its image, a digest of its engine arguments (the model.json files vLLM is given: "
                    "two releases with the same digest differ only in image, repository or placement), its last "
                    "health gate, and which is current and which previous (what `tritonops rollback` goes back to; "
                    "`rollback --to ID` takes any release listed here that is not damaged).")
    add_reading_options(parser)
    parser.set_defaults(run=run)


def run(args, out) -> int:
    from tritonops.reading.releases import releases

    return show_host_results(out, args, releases(*reading_inputs(args)), "releases", _table)


def _table(results) -> Table:
    from rich.table import Table

    from tritonops.image.ids import short_image_id

    table = Table(title="RELEASES (newest first)", title_justify="left")
    for column in ("host", "release", "", "created", "who", "image", "engine args", "models", "gate"):
        table.add_column(column)
    for result in results:
        listing = result.payload
        if listing is None or not listing.releases:
            table.add_row(styled(result.host), status_text(result.status), "", "", "", "", "", "", styled(result.msg))
            continue
        for index, release in enumerate(listing.releases):
            gate = line(styled(release.gate, GATE_STYLES.get(release.gate, "")), f": {release.why}" if release.why else "")
            role = styled(release.role or "", "bold green" if release.role == "current" else "cyan")
            cells = (release.id, release.created, release.who, short_image_id(release.image_id), release.engine_args,
                     ",".join(release.models))
            host, name, created, who, image, args, models = (styled(v or "-") for v in (result.host, *cells))
            table.add_row(host if index == 0 else "", name, role, created, who, image, args, models, gate)
    return table
