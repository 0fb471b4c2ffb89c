"""`zapcli merge`: a finished subagent's work into the checkout's current branch.

A change to control files is the person's to allow: `--allow-control-files`,
or a question at a terminal naming the files; with `--json` or no terminal
(a script, CI) it is refused, saying how to allow it."""

from __future__ import annotations

import sys

from zapcli.cli.output import emit
from zapcli.ops.merge import Allow, merge
from zapcli.render import merge as render


def allowing(sid: str, allow_control_files: bool, json: bool) -> Allow:
    """What lets a merge change control files: the option, else the person at
    this terminal (never with --json, or when stdin or stderr is not one)."""
    if allow_control_files:
        return True
    try:
        asking = not json and sys.stdin.isatty() and sys.stderr.isatty()
    except (AttributeError, ValueError):
        asking = False
    if not asking:
        return False

    def ask(files: list[str]) -> bool:
        from rich.markup import escape

        from zapcli.cli.output import confirm
        from zapcli.render.text import escape_controls

        listed = "\n".join(f"  {escape(escape_controls(f))}" for f in files[:40])
        more = f"\n  … and {len(files) - 40} more" if len(files) > 40 else ""
        sys.stderr.write("\n")
        try:
            return confirm(f"[yellow]{sid} changes control files[/] — files other programs read "
                           f"as configuration that runs commands:\n{listed}{more}\n"
                           "Merge them into your checkout?")
        except EOFError:
            return False

    return ask


def execute(id: str, squash: bool = False, rebase: bool = False,
            allow_control_files: bool = False, json: bool = False) -> int:
    from zapcli.ops import merge as ops_merge

    ops_merge.HOLD_TO_EXIT = True  # this process ends once the result is said
    emit(json, render.doc, render.lines,
         merge(id, squash=squash, rebase=rebase,
               allow_control=allowing(id, allow_control_files, json)))
    return 0
