"""The `trust` and `untrust` commands of the typer application (declared
beside `zapcli.cli.app`, which imports this module after its own commands;
their bodies are `zapcli.cli.commands.trust` and `.untrust`)."""

from __future__ import annotations

from typing import Optional

import typer

from zapcli.cli.app import _run, app
from zapcli.cli.options import JSON


@app.command()
def trust(
    path: Optional[str] = typer.Argument(None, help="The folder (default: this one); its workspace (the git top-level) is what is trusted.", metavar="PATH"),
    list_: bool = typer.Option(False, "--list", help="List every trusted folder: its files, when, and whether they still match.", metavar=""),
    show: bool = typer.Option(False, "--show", help="Show what trusting PATH covers (each file, its sha256, trusted or not); change nothing.", metavar=""),
    revoke: bool = typer.Option(False, "--revoke", help="Stop trusting PATH (as `zapcli untrust`).", metavar=""),
    json: bool = JSON,
) -> None:
    """Trust a folder's own zapcli files (config.yaml, mcp.json, definitions, skills) as they are now.

    Covered: .zapcli/config.yaml, .zapcli/mcp.json, each definition in
    .zapcli/subagents/, each skill's SKILL.md in .zapcli/skills/,
    .claude/skills/ and .agents/skills/. Until trusted they have no effect:
    no MCP server of theirs starts, no provider, base URL or key variable of
    theirs is used, no definition of theirs shadows a built-in. Each file's
    sha256 is recorded in your config folder; a changed or new file is
    ignored until you trust the folder again. Memory (.zapcli/agent-memory/)
    is data, not covered. Scripts and CI: --trust on spawn, run and doctor,
    or `trusted:` folders in your own config.yaml (they do not cover a
    repository inside another repository under them, unless it is a
    submodule git manages, nor a folder below one agent work was given to
    write in: trust it by name; --show says so).
    """
    _run("trust", locals())


@app.command()
def untrust(
    path: Optional[str] = typer.Argument(None, help="The folder (default: this one).", metavar="PATH"),
    json: bool = JSON,
) -> None:
    """Stop trusting a folder's own zapcli files (as `zapcli trust --revoke`)."""
    _run("untrust", locals())
