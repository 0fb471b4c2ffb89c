"""The fleet table: one line per subagent (or a group's header), drawn with
Textual's line API so a refresh paints only the lines on screen, whatever
the fleet's size.

Imports Textual and rich (segments and styles), `zapcli.tui.fleet`.
The selection follows a subagent, not a position: when a row moves to
another group (it asks for approval, it ends) the same subagent stays
selected. A click selects; the keys are the table's bindings.
"""

from __future__ import annotations

import time

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from zapcli.trail.model import Status
from zapcli.tui import fleet
from zapcli.tui.fleet import Line, Row

STATE_STYLE = {fleet.NEEDS: Style(color="magenta", bold=True), fleet.RUNNING: Style(color="cyan"),
               fleet.QUEUED: Style(color="yellow"), fleet.ENDED: Style(dim=True)}
FAILED = Style(color="red")
HEADER = Style(bold=True, underline=True)
GROUP = Style(bold=True, reverse=True)
CURSOR = Style(reverse=True)
PLAIN = Style()  # every segment has a style: NO_COLOR's monochrome filter reads it
MARKED = Style(bold=True)

# (key, title, width) after the task; the columns a narrow screen drops first are last
COLUMNS = (("backend", "BACKEND", 16), ("elapsed", "ELAPSED", 8), ("tokens", "TOKENS", 7),
           ("cost", "COST", 8), ("last", "LAST", 20), ("exec", "EXEC", 6),
           ("worktree", "WORKTREE", 14))
# with every session's subagents shown, which session each is of comes first
SESSION = ("session", "SESSION", 12)
ALL_SESSIONS = (SESSION, COLUMNS[1], COLUMNS[0], *COLUMNS[2:])
MIN_TASK = 16
LEAD = 2 + 8 + 2  # mark, id, gaps
STATE_W = 18


def _cell(text: str, width: int) -> str:
    if len(text) > width:
        return text[: max(width - 1, 0)] + "…"
    return text.ljust(width)


class FleetTable(ScrollView, can_focus=True):
    """`show(lines, rows, marks)` draws; `selected` is the selected id;
    posts `FleetTable.Selected` when the selection changes."""

    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
    ]

    DEFAULT_CSS = """
    FleetTable { height: 1fr; }
    """

    class Selected(Message):
        """The selection moved to `sid`; `by_user`: a key or a click moved it."""

        def __init__(self, sid: str | None, by_user: bool = False) -> None:
            super().__init__()
            self.sid, self.by_user = sid, by_user

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.lines: list[Line] = []
        self.rows: dict[str, Row] = {}
        self.marks: set[str] = set()
        self.cursor = -1
        self._index: dict[str, int] = {}
        self.empty_text = "no subagents"
        self._columns: list[tuple[str, str, int]] = []
        self._task_w = MIN_TASK
        self._laid = (0, False)  # the width and the sessions shown it was laid out for
        self.all_sessions = False

    # --- data -----------------------------------------------------------------
    @property
    def selected(self) -> str | None:
        if 0 <= self.cursor < len(self.lines):
            return self.lines[self.cursor].sid
        return None

    def show(self, lines: list[Line], rows: dict[str, Row], marks: set[str],
             all_sessions: bool = False) -> None:
        before = self.selected
        self.lines, self.rows, self.marks = lines, rows, marks
        self.all_sessions = all_sessions
        self._index = {line.sid: i for i, line in enumerate(lines) if line.sid is not None}
        index = self._index_of(before) if before else None
        if index is None:
            index = self._first_row(max(min(self.cursor, len(lines) - 1), 0))
        self._set_cursor(index, announce=before != (lines[index].sid if index is not None else None))
        self.virtual_size = Size(self.size.width, len(lines) + 1)
        self.refresh()

    def repaint(self, sids: set[str]) -> None:
        """Paint again the lines of `sids` that are on screen (nothing moved)."""
        top = int(self.scroll_y)
        width = self.width
        for sid in sids:
            index = self._index.get(sid)
            if index is not None and top <= index < top + self.size.height - 1:
                self.refresh(Region(0, index - top + 1, width, 1))

    def select(self, sid: str) -> bool:
        index = self._index_of(sid)
        if index is None:
            return False
        self._set_cursor(index, announce=True)
        return True

    def _index_of(self, sid: str) -> int | None:
        return self._index.get(sid)

    def _first_row(self, start: int) -> int | None:
        for i in list(range(start, len(self.lines))) + list(range(start - 1, -1, -1)):
            if self.lines[i].sid is not None:
                return i
        return None

    def _set_cursor(self, index: int | None, *, announce: bool, by_user: bool = False) -> None:
        self.cursor = -1 if index is None else index
        if index is not None:
            self._scroll_to_cursor()
        if announce:
            self.post_message(self.Selected(self.selected, by_user))
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        view = max(self.size.height - 1, 1)
        top = int(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=max(self.cursor - 1 if self.cursor and self.lines[self.cursor - 1].sid
                                 is None else self.cursor, 0), animate=False)
        elif self.cursor >= top + view:
            self.scroll_to(y=self.cursor - view + 1, animate=False)

    # --- keys and mouse -----------------------------------------------------
    def action_move(self, step: int) -> None:
        i = self.cursor
        while 0 <= i + step < len(self.lines):
            i += step
            if self.lines[i].sid is not None:
                self._set_cursor(i, announce=True, by_user=True)
                return

    def action_page(self, direction: int) -> None:
        for _ in range(max(self.size.height - 2, 1)):
            self.action_move(direction)

    def action_edge(self, end: int) -> None:
        order = range(len(self.lines) - 1, -1, -1) if end else range(len(self.lines))
        index = next((i for i in order if self.lines[i].sid is not None), None)
        if index is not None:
            self._set_cursor(index, announce=True, by_user=True)

    def on_click(self, event: Click) -> None:
        index = event.y - 1 + int(self.scroll_y)
        if event.y >= 1 and 0 <= index < len(self.lines) and self.lines[index].sid is not None:
            self._set_cursor(index, announce=True, by_user=True)

    # --- drawing -----------------------------------------------------------
    @property
    def width(self) -> int:
        """The columns a line has on screen: the scrollbar (a fleet taller
        than the screen) takes two of the widget's."""
        return self.scrollable_content_region.width or self.size.width

    def on_resize(self) -> None:
        self._layout(self.width)
        self.virtual_size = Size(self.size.width, len(self.lines) + 1)

    def _layout(self, width: int) -> None:
        self._laid = (width, self.all_sessions)
        room = width - LEAD - STATE_W - 2
        columns = list(ALL_SESSIONS if self.all_sessions else COLUMNS)
        while columns and room - sum(w + 2 for _, _, w in columns) < MIN_TASK:
            columns.pop()
        self._columns = columns
        self._task_w = max(room - sum(w + 2 for _, _, w in columns), MIN_TASK)

    def _fit(self) -> None:
        """Lay the columns out again when the scrollbar came or went, or the
        sessions shown changed, since the last layout."""
        width = self.width
        if width and self._laid != (width, self.all_sessions):
            self._layout(width)

    def header_text(self) -> str:
        self._fit()
        cells = ["  ", _cell("ID", 8), "  ", _cell("STATE", STATE_W), "  ", _cell("TASK", self._task_w)]
        for _key, title, w in self._columns:
            cells += ["  ", _cell(title, w)]
        return "".join(cells)

    def render_line(self, y: int) -> Strip:
        self._fit()
        width = self.width
        if y == 0:
            return Strip([Segment(_cell(self.header_text(), width), HEADER)]).crop(0, width)
        index = y - 1 + int(self.scroll_y)
        if not self.lines:
            text = self.empty_text if y == 1 else ""
            return Strip([Segment(_cell(text, width), Style(dim=True))])
        if index >= len(self.lines):
            return Strip.blank(width, PLAIN)
        line = self.lines[index]
        if line.sid is None:
            return Strip([Segment(_cell(" " + line.label, width), GROUP)])
        row = self.rows.get(line.sid)
        if row is None:
            return Strip.blank(width, PLAIN)
        strip = Strip([Segment(_cell(self.row_text(row, line), width), self._style(row))])
        return strip.apply_style(CURSOR) if index == self.cursor else strip

    def _style(self, row: Row) -> Style:
        g = fleet.group(row)
        style = STATE_STYLE[g]
        if g == fleet.ENDED and row.view.status != Status.COMPLETED:
            style = FAILED if row.view.status != Status.CANCELLED else Style(color="yellow", dim=True)
        return style + MARKED if row.id in self.marks else style

    def row_text(self, row: Row, line: Line) -> str:
        v = row.view
        now = time.time()
        mark = "● " if row.id in self.marks else "  "
        task_w = self._task_w
        lead = line.branch
        cells = [mark, _cell(v.id[-8:], 8), "  ", _cell(fleet.state_text(row), STATE_W), "  ",
                 _cell(lead + fleet.task_text(v, max(task_w - len(lead), 1)), task_w)]
        values = {"backend": fleet.backend_text(v), "elapsed": fleet.elapsed_text(v),
                  "tokens": fleet.tokens_text(v), "cost": fleet.cost_text(v),
                  "last": fleet.last_text(row, now), "exec": row.executor,
                  "worktree": fleet.worktree_text(v), "session": fleet.session_text(v)}
        for key, _title, w in self._columns:
            cells += ["  ", _cell(values[key], w)]
        return "".join(cells)
