"""The board pane: the session's task board (each task, who holds it, what
it waits for) — with every session shown (`top --all`), each one's that has
tasks — and the queued subagents with what each waits on.

Imports Textual and rich, `zapcli.team.board` (the board's reader: it
reads the tasks and gives back nothing — `top` never reaps a claim, the
board verbs do), `zapcli.render.board` (the words `zapcli board list` uses),
`zapcli.tui.fleet`.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from zapcli.errors import ZapcliError
from zapcli.render.board import counts, task_line
from zapcli.trail.model import Status
from zapcli.tui.fleet import Row

STYLE = {"done": "green", "claimed": "cyan", "open": ""}


def board_text(session: str, rows: list[Row], all_sessions: bool = False) -> Text:
    """The board of `session`; `all_sessions` (`top --all`): the board of each
    session shown that has tasks, this one first. Then the queued subagents
    among `rows`."""
    out = Text()
    if not all_sessions:
        _one_board(out, session)
    else:
        others = sorted({r.view.session for r in rows if r.view.session} - {session})
        shown = [s for s in (session, *others) if _one_board(out, s, quiet=True)]
        if not shown:
            out.append(f"no tasks on any board of the {len(others) + 1} session(s) shown "
                       "(zapcli board add TEXT puts one there)\n", style="dim")
    queued = [r for r in rows if r.view.status == Status.QUEUED]
    out.append(f"\nqueued subagents: {len(queued)}\n", style="bold")
    for r in queued:
        after = ", ".join(a[-8:] for a in r.view.after)
        held = (r.view.held or {}).get("reason")
        why = f"after {after}" if after else (str(held) if held else "a free slot")
        out.append(f"{r.id[-8:]} waits on {why}\n", style="yellow")
    return out


def _one_board(out: Text, session: str, quiet: bool = False) -> bool:
    """Append `session`'s board to `out`; whether it has tasks. `quiet`: a
    board without tasks (or unreadable) adds nothing."""
    from zapcli.team import board

    try:
        tasks = board.tasks(session)
    except ZapcliError as exc:
        if not quiet:
            out.append(f"the board cannot be read: {exc.message}\n", style="red")
        return False
    if quiet and not tasks:
        return False
    c = counts(tasks)
    out.append(f"board of {session}: {len(tasks)} task(s), {c['done']} done, {c['claimed']} "
               f"claimed, {c['open']} open\n", style="bold")
    by_num = {t.num: t for t in tasks}
    for t in tasks:
        out.append(task_line(t) + "\n", style=STYLE.get(t.state, ""))
        waits = [f"t{a}" for a in t.after if by_num.get(a) is None or by_num[a].state != "done"]
        if t.state == "open" and waits:
            out.append(f"   waits on {', '.join(waits)}\n", style="yellow")
    if not tasks:
        out.append("no tasks (zapcli board add TEXT puts one there)\n", style="dim")
    return bool(tasks)


class BoardPane(VerticalScroll):
    DEFAULT_CSS = """
    BoardPane { width: 44%; border-left: solid $secondary; padding: 0 1; display: none; }
    BoardPane.on { display: block; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="board-text")

    def show(self, session: str, rows: list[Row], all_sessions: bool = False) -> None:
        self.query_one("#board-text", Static).update(board_text(session, rows, all_sessions))
