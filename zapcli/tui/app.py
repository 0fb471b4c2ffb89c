"""`zapcli top`'s application: the fleet screen (status line, table, peek,
board, filter line, footer) and the thread that feeds it.

Imports Textual and rich, `zapcli.tui` (data, fleet, table, peek, board,
keys), `zapcli.config`. The feed thread is the only reader of
subagents' files while the app runs: it looks at everything once (the
most recently written first, so the first paint comes early), then at
what the change feed names, and once a second at the live rows (their
elapsed time, a runner that died, a stall) — and hands the rows to the
screen. What the keys do is `zapcli.tui.keys`.
"""

from __future__ import annotations

import threading
import time

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from zapcli.config import Settings
from zapcli.tui import fleet
from zapcli.tui.board import BoardPane
from zapcli.tui.data import Source
from zapcli.tui.fleet import Filter, Row
from zapcli.tui.keys import FleetKeys
from zapcli.tui.peek import Peek
from zapcli.tui.table import FleetTable

TICK_S = 1.0  # live rows re-derived (elapsed, alive, stalled) this often
WAKE_S = 0.25  # the feed thread checks for quitting and rescans this often
FIRST_CHUNK = 60  # trails looked at before the first paint (the newest written)
CHUNK = 250
MIN_SIZE = (60, 12)


class KeysFooter(Footer):
    """The fleet's footer: every key when they fit the terminal's width; on
    a narrower one (80 columns) the keys of `SPARE` give way, in that order,
    so that the rest — `q Quit` last — is never cut off, down to the
    narrowest terminal top draws on (`MIN_SIZE`): approve, deny, kill and
    quit always stay. The keys left out are in `zapcli top`'s docs."""

    SPARE = ("mark", "remove", "board", "tree", "sessions", "next_need", "filter",
             "attach")  # space, r (at 80 columns); then b, t, s, n, /, enter

    def compose(self) -> ComposeResult:
        shown = [b for _node, b, _on, _tip in self.screen.active_bindings.values() if b.show]
        room = self.app.size.width
        need = sum(len(self.app.get_key_display(b)) + 1 + len(b.description) + 1 for b in shown) - 1
        drop: set[str] = set()
        for action in self.SPARE:
            if need <= room:
                break
            for b in shown:
                if b.action == action:
                    drop.add(action)
                    need -= len(self.app.get_key_display(b)) + 2 + len(b.description)
        for widget in super().compose():
            if getattr(widget, "action", None) not in drop:  # a FooterKey's
                yield widget

    async def on_resize(self) -> None:
        await self.recompose()


class FleetScreen(FleetKeys, Screen[None]):
    """The table of the fleet with its peek; every key of the fleet."""

    BINDINGS = [
        Binding("a", "approve", "Approve"),
        Binding("d", "deny", "Deny"),
        Binding("x", "kill", "Kill"),
        Binding("r", "remove", "Rm"),
        Binding("space", "mark", "Mark"),
        Binding("enter", "attach", "Attach"),
        Binding("slash", "filter", "Filter"),
        Binding("t", "tree", "Tree"),
        Binding("b", "board", "Board"),
        Binding("s", "sessions", "All"),  # this session / every session
        Binding("n", "next_need", "Next"),  # the next row that needs you
        Binding("u", "unmark", "Unmark all", show=False),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("q", "app.quit", "Quit"),
    ]
    DEFAULT_CSS = """
    #status { height: 1; background: $primary-background; padding: 0 1; }
    #left { width: 1fr; }
    #filter { dock: bottom; display: none; }
    #filter.on { display: block; }
    #too-small { display: none; width: 100%; height: 100%; content-align: center middle;
                 text-style: bold; }
    FleetScreen.small #too-small { display: block; }
    FleetScreen.small #main, FleetScreen.small Footer, FleetScreen.small #status { display: none; }
    """

    def __init__(self, settings: Settings, *, all_sessions: bool = False, as_tree: bool = False,
                 filter_text: str = "", source: Source | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.source = source or Source(settings, all_sessions=all_sessions)
        self.rows: dict[str, Row] = {}
        self.marks: set[str] = set()
        self.filter = Filter.parse(filter_text)
        self.as_tree = as_tree
        self.user_moved = False
        self.loaded = False  # the first full look is done
        self.painted_at: float | None = None  # when the first rows were on screen (monotonic)
        self.applied = 0  # rows handed to the screen so far (tests and the bench count them)
        self._stop = threading.Event()
        self._rescan = threading.Event()
        self._want_all = self.source.all_sessions
        self._next_tick = 0.0
        self._status_text = ""

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield FleetTable(id="table")
                yield Peek(id="peek")
            yield BoardPane(id="board")
        yield Input(placeholder="filter: s:running a:explorer c:claude e:ray or words of the "
                                "task; Enter keeps it, Esc clears it", id="filter")
        yield Static(id="too-small")
        yield KeysFooter(compact=True)

    def on_mount(self) -> None:
        self.table.empty_text = "looking at the subagents…"
        self.query_one("#filter", Input).value = self.filter.text
        self.table.focus()
        self._fit(self.app.size.width, self.app.size.height)
        self._status()
        self.run_worker(self._feed, thread=True, group="feed", name="feed")
        self.set_interval(2.0, self._board_tick)

    def on_unmount(self) -> None:
        self._stop.set()

    @property
    def table(self) -> FleetTable:
        return self.query_one("#table", FleetTable)

    @property
    def peek(self) -> Peek:
        return self.query_one("#peek", Peek)

    # --- the feed thread ----------------------------------------------------
    def _feed(self) -> None:
        src = self.source
        try:
            self._look_all()
            self._next_tick = time.monotonic() + TICK_S
            while not self._stop.is_set():
                try:
                    self._feed_once(src)
                except Exception as exc:  # noqa: BLE001 - one bad look must not end the view
                    self._post_note(f"top could not look: {exc}")
                    self._stop.wait(TICK_S)
        finally:
            src.close()

    def _feed_once(self, src: Source) -> None:
        changed = src.changes(WAKE_S)
        if self._stop.is_set():
            return
        if self._rescan.is_set():
            self._rescan.clear()
            src.rescope(self._want_all)
            self._look_all(again=True)
            return
        looks = {sid: self._look(sid) for sid in changed}
        ticked: dict[str, Row | None] = {}
        now = time.monotonic()
        if now >= self._next_tick:  # what no file says: time passing, a runner dying
            self._next_tick = now + TICK_S
            src.collect()
            live = [sid for sid, r in list(self.rows.items())
                    if not r.view.terminal and sid not in looks]
            ticked = {sid: self._look(sid, changed=False) for sid in live}
        if looks or ticked:
            self._post(looks, ticked=ticked)

    def _post_note(self, message: str) -> None:
        try:
            self.app.call_from_thread(self.app.notify, message, severity="error", markup=False)
        except RuntimeError:
            self._stop.set()

    def _look(self, sid: str, changed: bool = True) -> Row | None:
        row = self.source.look(sid, changed=changed)
        return row if row is not None and self.source.shows(row) else None

    def _look_all(self, again: bool = False) -> None:
        src = self.source
        ids = src.ids()
        ids.sort(key=_written, reverse=True)
        first, rest = ids[:FIRST_CHUNK], ids[FIRST_CHUNK:]
        gone = set(self.rows) - set(ids) if again else set()
        self._post({**dict.fromkeys(gone), **{sid: self._look(sid) for sid in first}},
                   done=not rest)
        for i in range(0, len(rest), CHUNK):
            if self._stop.is_set():
                return
            part = rest[i:i + CHUNK]
            self._post({sid: self._look(sid) for sid in part}, done=i + CHUNK >= len(rest))

    def _post(self, rows: dict[str, Row | None], done: bool = False,
              ticked: dict[str, Row | None] | None = None) -> None:
        if not self._stop.is_set():
            try:
                self.app.call_from_thread(self.apply, rows, done, ticked)
            except RuntimeError:  # the app is closing
                self._stop.set()

    # --- rows in, screen out -----------------------------------------------
    def apply(self, rows: dict[str, Row | None], done: bool = False,
              ticked: dict[str, Row | None] | None = None) -> None:
        """Take the rows the feed thread looked at: `rows` (their files
        changed) and `ticked` (looked at again as time passed). The table is
        sorted again only when a row came, went or moved to another place;
        otherwise only the lines of those rows are painted again."""
        ticked = ticked or {}
        reorder = done or not self.loaded
        for sid, row in {**ticked, **rows}.items():
            old = self.rows.get(sid)
            if row is None:
                if old is not None:
                    reorder = True
                    del self.rows[sid]
                    self.marks.discard(sid)
                continue
            if old is None or fleet.place(old) != fleet.place(row):
                reorder = True
            self.rows[sid] = row
        self.applied += len(rows) + len(ticked)
        if done:
            self.loaded = True
        if reorder:
            self.redraw()
        else:
            self.table.repaint({*rows, *ticked})
        if self.painted_at is None and (self.rows or done):
            self.painted_at = time.monotonic()
        selected = self.table.selected
        if selected in rows:
            self.peek.show(self.rows.get(selected), self.source)
        elif selected in ticked and selected in self.rows:
            self.peek.tick(self.rows[selected])

    def shown_rows(self) -> list[Row]:
        return [r for r in self.rows.values() if self.filter.matches(r)]

    def redraw(self) -> None:
        shown = self.shown_rows()
        if self.rows and not shown:
            self.table.empty_text = (f"nothing matches the filter {self.filter.describe()!r} "
                                     "(Esc clears it)")
        elif self.loaded:
            self.table.empty_text = "no subagents" + (
                "" if self._want_all else " in this session (s shows every session's)")
        lines = fleet.lines(shown, as_tree=self.as_tree)
        self.table.show(lines, self.rows, self.marks, self.source.all_sessions)
        current = self.rows.get(self.table.selected or "")
        if not self.user_moved and (current is None or current.group != fleet.NEEDS):
            # until the person moves or acts, a row that needs them is selected; one on
            # screen is never swapped for another under their eyes
            first = next((line.sid for line in lines if line.sid is not None
                          and self.rows[line.sid].group == fleet.NEEDS), None)
            if first is not None:
                self.table.select(first)
        self._status(shown)

    def _status(self, shown: list[Row] | None = None) -> None:
        shown = shown if shown is not None else self.shown_rows()
        per = {g: 0 for g in fleet.GROUP_NAMES}
        for r in shown:
            per[fleet.group(r)] += 1
        scope = "every session" if self._want_all else f"session {self.source.session}"
        parts = [f"zapcli top · {scope}", f"{len(shown)} shown"]
        parts += [f"{n} {fleet.GROUP_NAMES[g]}" for g, n in per.items() if n]
        if self.filter.terms:
            parts.append(f"filter: {self.filter.describe()}")
        if self.marks:
            parts.append(f"{len(self.marks)} marked")
        if self.as_tree:
            parts.append("tree")
        if not self.loaded:
            parts.append("loading…")
        text = " · ".join(parts)
        if text != self._status_text:
            self._status_text = text
            self.query_one("#status", Static).update(Text(text), layout=False)

    def on_fleet_table_selected(self, message: FleetTable.Selected) -> None:
        if message.by_user:
            self.user_moved = True
        self.peek.show(self.rows.get(message.sid) if message.sid else None, self.source)

    def _board_tick(self) -> None:
        board = self.query_one("#board", BoardPane)
        if board.has_class("on"):
            board.show(self.source.session, list(self.rows.values()), self.source.all_sessions)

    # --- a terminal too small -----------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        self.set_class(small, "small")
        if small:
            self.query_one("#too-small", Static).update(Text(
                f"the terminal is too small for zapcli top ({width}×{height}); it needs at least "
                f"{MIN_SIZE[0]}×{MIN_SIZE[1]} — make the window larger (q quits)"))


def _written(sid: str) -> float:
    import os

    from zapcli.trail import store

    try:
        return os.stat(store.path_for(sid), follow_symlinks=False).st_mtime
    except OSError:
        return 0.0


class TopApp(App[None]):
    """`zapcli top`: one screen, the fleet's."""

    TITLE = "zapcli top"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("ctrl+c", "quit", "Quit", show=False, priority=True)]

    def __init__(self, settings: Settings, *, all_sessions: bool = False, as_tree: bool = False,
                 filter_text: str = "", source: Source | None = None) -> None:
        super().__init__()
        self.fleet = FleetScreen(settings, all_sessions=all_sessions, as_tree=as_tree,
                                 filter_text=filter_text, source=source)

    def on_mount(self) -> None:
        self.push_screen(self.fleet)
