"""`zapcli help [COMMAND...]`: the help `--help` shows, of zapcli or of one
of its commands (as git and cargo take it). The words are a path through the
command table (`agents save`); a word past a command, or a subcommand its
group lacks, is a usage error naming what exists — never ignored."""

from __future__ import annotations

from zapcli.errors import UsageError


def execute(command: list[str] | None = None) -> int:
    from zapcli.cli.entry import main

    words = list(command or [])
    _check(words)
    return main([*words, "--help"])


def _check(words: list[str]) -> None:
    """Raises UsageError for words that name no command path. An unknown first
    word is left to the parser, which offers a did-you-mean."""
    if not words:
        return
    from zapcli.cli.gen import commands, groups

    first, groups_ = words[0], groups()
    if first in groups_:
        subs = groups_[first]
        if len(words) > 1 and words[1] not in subs:
            raise UsageError(f"`{first}` has no subcommand `{words[1]}`; its subcommands: "
                             f"{', '.join(subs)} (zapcli help {first} shows them)")
        path = words[:2]
    elif first in commands():
        path = words[:1]
    else:
        return
    if len(words) > len(path):
        shown = " ".join(path)
        raise UsageError(f"`{shown}` has no subcommands, so `{' '.join(words[len(path):])}` "
                         f"names nothing; zapcli help {shown} shows its help")
