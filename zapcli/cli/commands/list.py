"""`zapcli list`: this session's subagents, newest first; `--watch` keeps a
live table on the terminal until Ctrl-C, on the change feed
(`zapcli.lifecycle.feed`, `zapcli.ops.listing.Watch`)."""

from __future__ import annotations

from zapcli.cli.output import emit, is_tty
from zapcli.cli.settings import for_observers
from zapcli.errors import UsageError
from zapcli.ops.listing import list_subagents
from zapcli.render import listing as render
from zapcli.render.text import spell

WATCH_INTERVAL_S = 1.0
MIN_FRAME_S = 0.25  # a chatty subagent redraws the table at most this often


def execute(all: bool = False, status: list[str] | None = None, limit: int | None = None,
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
        out.append(("dim", spell(render.elsewhere(res.session, res.in_other_sessions, res.named),
                                 "cli")))
    return out


def _watch(settings, all_sessions: bool, status: list[str] | None, limit: int | None) -> int:  # type: ignore[no-untyped-def]
    """A rich Live table until Ctrl-C (exit 0): redrawn as soon as a listed
    subagent's files change (the change feed), and every second besides for
    what changes no file (elapsed time, a runner that died)."""
    import time

    from rich.console import Console, Group
    from rich.live import Live
    from rich.text import Text

    from zapcli.lifecycle.feed import Feed
    from zapcli.ops.listing import Watch

    watch = Watch(settings, all_sessions=all_sessions, status=status, limit=limit)

    def frame(changed: set[str] | None) -> Group:
        res = watch.refresh(changed)
        stamp = time.strftime("%H:%M:%S")
        lines = _lines(res) + [("dim", f"(updated {stamp}; Ctrl-C to stop)")]
        return Group(*(Text(text, style=style or "") for style, text in lines))

    console = Console(highlight=False)
    try:
        with Feed(session=None if all_sessions else watch.session, interval=WATCH_INTERVAL_S,
                  suffixes=(".jsonl",)) as feed, \
                Live(frame(None), console=console, refresh_per_second=4, transient=False) as live:
            while True:
                drawn = time.monotonic()
                changed = feed.changes(WATCH_INTERVAL_S)
                time.sleep(max(drawn + MIN_FRAME_S - time.monotonic(), 0.0))
                live.update(frame(changed | feed.changes(0)))
    except KeyboardInterrupt:
        return 0
