"""`zapcli top`: the live fleet view, an optional front end (the `zapcli[tui]`
extra, Textual) beside the CLI.

Imported only by `zapcli.cli.commands.top`, which says how to install
Textual when it is missing. The room looks through the lifecycle room's
pure look and change feed (`zapcli.tui.data`, the one place that reads
subagents' files), and acts only through the ops verbs (`zapcli.tui.acts`):
approve, deny, kill, rm and send are never implemented twice. What it shows
is made by `zapcli.tui.fleet` (rows, groups, filter, tree: no Textual, no
files), drawn by the widgets in `table`, `peek`, `board` and `screens`,
and put together by `zapcli.tui.app`.
"""
