"""`zapcli top`'s application: the fleet screen (status line, table, peek,
board, filter line, footer) and the thread that feeds it.

Imports Textual and rich, `zapcli.tui` (data, fleet, table, peek, board,
screens, acts), `zapcli.config`. The feed thread is the only reader of
subagents' files while the app runs: it looks at everything once (the
most recently written first, so the first paint comes early), then at
what the change feed names, and once a second at the live rows (their
elapsed time, a runner that died, a stall) — and hands the rows to the
screen. Every action goes through `zapcli.tui.acts` on a worker thread, so
a kill's grace period never freezes the screen.
"""

from __future__ import annotations

import threading
import time

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from zapcli.config import Settings
from zapcli.tui import acts, fleet
from zapcli.tui.board import BoardPane
from zapcli.tui.data import Source
from zapcli.tui.fleet import Filter, Row
from zapcli.tui.peek import Peek, text_of
from zapcli.tui.screens import Attach, Confirm, Reason
from zapcli.tui.table import FleetTable

TICK_S = 1.0  # live rows re-derived (elapsed, alive, stalled) this often
WAKE_S = 0.25  # the feed thread checks for quitting and rescans this often
FIRST_CHUNK = 60  # trails looked at before the first paint (the newest written)
CHUNK = 250
MIN_SIZE = (60, 12)


class FleetScreen(Screen[None]):
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
        Binding("s", "sessions", "Sessions"),
        Binding("n", "next_need", "Next need"),
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
        yield Footer()

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
            next_tick = time.monotonic() + TICK_S
            while not self._stop.is_set():
                changed = src.changes(WAKE_S)
                if self._stop.is_set():
                    return
                if self._rescan.is_set():
                    self._rescan.clear()
                    self._look_all(again=True)
                    continue
                now = time.monotonic()
                if now >= next_tick:
                    changed |= {sid for sid, r in list(self.rows.items()) if not r.view.terminal}
                    next_tick = now + TICK_S
                if changed:
                    self._post({sid: self._look(sid) for sid in changed})
        finally:
            src.close()

    def _look(self, sid: str) -> Row | None:
        row = self.source.look(sid)
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

    def _post(self, rows: dict[str, Row | None], done: bool = False) -> None:
        if not self._stop.is_set():
            try:
                self.app.call_from_thread(self.apply, rows, done)
            except RuntimeError:  # the app is closing
                self._stop.set()

    # --- rows in, screen out -----------------------------------------------
    def apply(self, rows: dict[str, Row | None], done: bool = False) -> None:
        for sid, row in rows.items():
            if row is None:
                self.rows.pop(sid, None)
                self.marks.discard(sid)
            else:
                self.rows[sid] = row
        self.applied += len(rows)
        if done:
            self.loaded = True
            self.table.empty_text = "no subagents" + (" in this session (s shows every session's)"
                                                      if not self.source.all_sessions else "")
        self.redraw()
        if self.painted_at is None and (self.rows or done):
            self.painted_at = time.monotonic()
        selected = self.table.selected
        if selected in rows:
            self.peek.show(self.rows.get(selected), self.source)

    def shown_rows(self) -> list[Row]:
        return [r for r in self.rows.values() if self.filter.matches(r)]

    def redraw(self) -> None:
        shown = self.shown_rows()
        lines = fleet.lines(shown, as_tree=self.as_tree)
        self.table.show(lines, self.rows, self.marks)
        if not self.user_moved:
            first = next((r for r in sorted(shown, key=fleet._flat_key)
                          if fleet.group(r) == fleet.NEEDS), None)
            if first is not None and self.table.selected != first.id:
                self.table.select(first.id)
        self._status(shown)

    def _status(self, shown: list[Row] | None = None) -> None:
        shown = shown if shown is not None else self.shown_rows()
        per = {g: 0 for g in fleet.GROUP_NAMES}
        for r in shown:
            per[fleet.group(r)] += 1
        scope = "every session" if self.source.all_sessions else f"session {self.source.session}"
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
        self.query_one("#status", Static).update(Text(" · ".join(parts)))

    def on_fleet_table_selected(self, message: FleetTable.Selected) -> None:
        if message.by_user:
            self.user_moved = True
        self.peek.show(self.rows.get(message.sid) if message.sid else None, self.source)

    def _board_tick(self) -> None:
        board = self.query_one("#board", BoardPane)
        if board.has_class("on"):
            board.show(self.source.session, list(self.rows.values()))

    # --- a terminal too small -----------------------------------------------
    def on_resize(self, event) -> None:  # type: ignore[no-untyped-def]
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        small = width < MIN_SIZE[0] or height < MIN_SIZE[1]
        self.set_class(small, "small")
        if small:
            self.query_one("#too-small", Static).update(Text(
                f"the terminal is too small for zapcli top ({width}×{height}); it needs at least "
                f"{MIN_SIZE[0]}×{MIN_SIZE[1]} — make the window larger (q quits)"))

    # --- what the keys do ------------------------------------------------------
    def _targets(self, want) -> list[Row]:  # type: ignore[no-untyped-def]
        """The marked rows that `want` accepts, else the selected one if it does."""
        if self.marks:
            return [r for sid in self.marks if (r := self.rows.get(sid)) is not None and want(r)]
        row = self.rows.get(self.table.selected or "")
        return [row] if row is not None and want(row) else []

    def _run(self, work, then=None) -> None:  # type: ignore[no-untyped-def]
        def job() -> None:
            done = work()
            self.app.call_from_thread(self._told, done, then)

        self.run_worker(job, thread=True, group="acts")

    def _told(self, done: acts.Done, then=None) -> None:  # type: ignore[no-untyped-def]
        self.app.notify(done.message, severity="information" if done.ok else "error",
                        markup=False, timeout=6 if done.ok else 10)
        if then is not None:
            then()

    def action_approve(self) -> None:
        if self.marks:
            pending = self._targets(lambda r: r.view.pending_approval is not None)
            if not pending:
                self.app.notify("none of the marked subagents awaits approval", markup=False)
                return
            asks = [(r.id, str(r.view.pending_approval["req_id"])) for r in pending]  # type: ignore[index]
            body = text_of([line for r in pending for line in _request_lines(r)])

            def answer(yes: bool | None) -> None:
                if yes:
                    self._run(lambda: acts.decide_all(asks, True), self._unmark_all)
            self.app.push_screen(Confirm(f"Approve these {len(asks)} requests, each as shown?",
                                         body), answer)
            return
        asked = self.peek.asked
        if asked is None or asked[0] != self.table.selected:
            self.app.notify("the selected subagent awaits no approval", markup=False)
            return
        self._run(lambda: acts.decide(asked[0], asked[1], True))

    def action_deny(self) -> None:
        if self.marks:
            pending = self._targets(lambda r: r.view.pending_approval is not None)
            asks = [(r.id, str(r.view.pending_approval["req_id"])) for r in pending]  # type: ignore[index]
        else:
            asked = self.peek.asked
            asks = [asked] if asked is not None and asked[0] == self.table.selected else []
        if not asks:
            self.app.notify("nothing selected awaits approval", markup=False)
            return
        title = (f"Deny {asks[0][0][-8:]} {asks[0][1]}" if len(asks) == 1
                 else f"Deny {len(asks)} requests") + ": the reason is told to the model"

        def answer(reason: str | None) -> None:
            if reason is not None:
                self._run(lambda: acts.decide_all(asks, False, reason or None), self._unmark_all)
        self.app.push_screen(Reason(title), answer)

    def action_kill(self) -> None:
        rows = self._targets(lambda r: not r.view.terminal)
        if not rows:
            self.app.notify("nothing selected is running or queued", markup=False)
            return
        ids = [r.id for r in rows]

        def answer(yes: bool | None) -> None:
            if yes:
                self._run(lambda: acts.kill(ids, self.settings), self._unmark_all)
        self.app.push_screen(Confirm(f"Kill {len(ids)} subagent(s)? Their whole process trees "
                                     "end (SIGTERM, then SIGKILL after the grace period).",
                                     _listing(rows)), answer)

    def action_remove(self) -> None:
        rows = self._targets(lambda r: r.view.terminal)
        if not rows:
            self.app.notify("nothing selected has ended: only ended subagents are removed "
                            "(x kills one first)", markup=False)
            return
        ids = [r.id for r in rows]

        def answer(yes: bool | None) -> None:
            if yes:
                self._run(lambda: acts.remove(ids, self.settings), self._unmark_all)
        self.app.push_screen(Confirm(f"Remove {len(ids)} ended subagent(s)? Their trails and "
                                     "output are deleted.", _listing(rows)), answer)

    def action_mark(self) -> None:
        sid = self.table.selected
        if sid is None:
            return
        self.marks.symmetric_difference_update({sid})
        self.user_moved = True
        self.table.action_move(1)
        self.table.refresh()
        self._status()

    def _unmark_all(self) -> None:
        self.marks.clear()
        self.table.refresh()
        self._status()

    def action_unmark(self) -> None:
        self._unmark_all()

    def action_attach(self) -> None:
        row = self.rows.get(self.table.selected or "")
        if row is None:
            return
        self.app.push_screen(Attach(row.id, f"{row.id} ({fleet.backend_text(row.view)}): "
                                            f"{fleet.task_text(row.view, 60)}"))

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("on")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.filter = Filter.parse(event.value)
            self.redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            event.input.set_class(bool(event.value.strip()), "on")
            self.table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("on")
        self.filter = Filter.parse("")
        self.redraw()
        self.table.focus()

    def action_tree(self) -> None:
        self.as_tree = not self.as_tree
        self.redraw()

    def action_board(self) -> None:
        board = self.query_one("#board", BoardPane)
        board.toggle_class("on")
        self._board_tick()

    def action_sessions(self) -> None:
        self.source.all_sessions = not self.source.all_sessions
        self.loaded = False
        self._rescan.set()
        self._status()

    def action_next_need(self) -> None:
        needs = [line.sid for line in self.table.lines if line.sid and
                 fleet.group(self.rows[line.sid]) == fleet.NEEDS]
        if not needs:
            self.app.notify("nothing needs input", markup=False)
            return
        current = self.table.selected
        after = needs[(needs.index(current) + 1) % len(needs)] if current in needs else needs[0]
        self.user_moved = True
        self.table.select(after)

    def on_button_pressed(self, event) -> None:  # type: ignore[no-untyped-def]
        if event.button.id == "approve":
            self.action_approve()
        elif event.button.id == "deny":
            self.action_deny()


def _written(sid: str) -> float:
    import os

    from zapcli.trail import store

    try:
        return os.stat(store.path_for(sid), follow_symlinks=False).st_mtime
    except OSError:
        return 0.0


def _listing(rows: list[Row]) -> Text:
    return text_of([("", f"{r.id}  {fleet.state_text(r)}  {fleet.task_text(r.view, 80)}")
                    for r in rows])


def _request_lines(row: Row) -> list[tuple[str, str]]:
    from zapcli.render.common import approval_lines

    req = row.view.pending_approval or {}
    return [("bold", f"{row.id}: {fleet.task_text(row.view, 100)}"),
            *approval_lines(req), ("", "")]


class TopApp(App[None]):
    """`zapcli top`: one screen, the fleet's."""

    TITLE = "zapcli top"
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, settings: Settings, *, all_sessions: bool = False, as_tree: bool = False,
                 filter_text: str = "", source: Source | None = None) -> None:
        super().__init__()
        self.fleet = FleetScreen(settings, all_sessions=all_sessions, as_tree=as_tree,
                                 filter_text=filter_text, source=source)

    def on_mount(self) -> None:
        self.push_screen(self.fleet)
