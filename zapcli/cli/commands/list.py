"""`zapcli list`: this session's subagents, newest first; `--watch` keeps a
live table on the terminal until Ctrl-C."""

from __future__ import annotations

from zapcli.cli.output import emit, is_tty
from zapcli.cli.settings import for_observers
from zapcli.errors import UsageError
from zapcli.ops.listing import list_subagents
from zapcli.render import listing as render
from zapcli.render.text import spell

WATCH_INTERVAL_S = 1.0


def execute(all: bool = False, status: str | None = None, limit: int | None = None,
            long: bool = False, watch: bool = False, json: bool = False) -> int:
    settings = for_observers()
    if watch:
        if json or not is_tty():
            raise UsageError("--watch draws a live table on a terminal; without one, "
                             "run zapcli list (or zapcli list --json) repeatedly")
        return _watch(settings, all, status, limit)
    res = list_subagents(settings, all_sessions=all, status=status, limit=limit, long=long)
    emit(json, render.doc, _lines, res)
    return 0


def _lines(res) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """The list; an empty one says what other sessions hold and how to see
    them (a new terminal is a session of its own)."""
    out = render.lines(res)
    if res.in_other_sessions:
        out.append(("dim", spell(render.elsewhere(res.session, res.in_other_sessions), "cli")))
    return out


def _watch(settings, all_sessions: bool, status: str | None, limit: int | None) -> int:  # type: ignore[no-untyped-def]
    """A rich Live table, refreshed every second, until Ctrl-C (exit 0)."""
    import time

    from rich.console import Console, Group
    from rich.live import Live
    from rich.text import Text

    def frame() -> Group:
        res = list_subagents(settings, all_sessions=all_sessions, status=status, limit=limit)
        stamp = time.strftime("%H:%M:%S")
        lines = _lines(res) + [("dim", f"(updated {stamp}; Ctrl-C to stop)")]
        return Group(*(Text(text, style=style or "") for style, text in lines))

    console = Console(highlight=False)
    try:
        with Live(frame(), console=console, refresh_per_second=4, transient=False) as live:
            while True:
                time.sleep(WATCH_INTERVAL_S)
                live.update(frame())
    except KeyboardInterrupt:
        return 0
