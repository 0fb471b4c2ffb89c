"""`zapcli help [COMMAND...]`: the help `--help` shows, of zapcli or of one
of its commands (as git and cargo take it)."""

from __future__ import annotations


def execute(command: list[str] | None = None) -> int:
    from zapcli.cli.entry import main

    return main([*(command or []), "--help"])
