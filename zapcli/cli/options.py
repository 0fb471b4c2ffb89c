"""Options more than one command declares: `--json`. Imports typer only.
`zapcli.cli.app` and `zapcli.cli.groups` both take them from here."""

from __future__ import annotations

import typer

JSON = typer.Option(False, "--json", help="Print one JSON document (stable snake_case keys).", metavar="")
