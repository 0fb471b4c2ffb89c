"""What the fleet screen's keys do: approve, deny (with a reason), kill and
rm (after a yes), marks for doing either to many, attach, the `/` filter,
the tree, the board, this session or every session, the next row that
needs the person.

Imports Textual and rich, `zapcli.tui` (acts, fleet, screens, peek).
`FleetKeys` is mixed into `zapcli.tui.app.FleetScreen` and uses its rows,
marks, table and peek. Every action runs its ops verb on a worker thread
and says the outcome in a notification. A single approval approves the
request the peek shows (its request id); approving several asks first,
showing each request whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widgets import Button, Input

from zapcli.tui import acts, fleet
from zapcli.tui.board import BoardPane
from zapcli.tui.fleet import Filter, Row
from zapcli.tui.peek import text_of
from zapcli.tui.screens import Attach, Confirm, Reason


class FleetKeys:
    """The actions of `FleetScreen`'s bindings."""

    rows: dict[str, Row]
    marks: set[str]
    filter: Filter
    as_tree: bool
    user_moved: bool
    loaded: bool
    settings: Any
    table: Any
    peek: Any
    app: Any
    _want_all: bool
    _rescan: Any

    if TYPE_CHECKING:  # what FleetScreen (a Textual Screen) provides
        def query_one(self, *args: Any) -> Any: ...
        def run_worker(self, *args: Any, **kw: Any) -> Any: ...
        def redraw(self) -> None: ...
        def _status(self, shown: list[Row] | None = None) -> None: ...
        def _board_tick(self) -> None: ...

    def _targets(self, want: Callable[[Row], bool]) -> list[Row]:
        """The marked rows that `want` accepts, else the selected one if it does."""
        if self.marks:
            return [r for sid in self.marks if (r := self.rows.get(sid)) is not None and want(r)]
        row = self.rows.get(self.table.selected or "")
        return [row] if row is not None and want(row) else []

    def _run(self, work: Callable[[], acts.Done], then: Callable[[], None] | None = None) -> None:
        self.user_moved = True  # after an action the selection stays where the person put it

        def job() -> None:
            try:
                done = work()
            except Exception as exc:  # noqa: BLE001 - said on screen; top goes on
                done = acts.Done(False, f"failed: {exc}")
            self.app.call_from_thread(self._told, done, then)

        self.run_worker(job, thread=True, group="acts")

    def _told(self, done: acts.Done, then: Callable[[], None] | None = None) -> None:
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
            asks = [(r.id, str((r.view.pending_approval or {}).get("req_id"))) for r in pending]
            body = text_of([line for r in pending for line in _request_lines(r)])

            def answer(yes: bool | None) -> None:
                if yes:
                    self._run(lambda: acts.decide_all(asks, True), self._unmark_all)
            what = "this request, as shown" if len(asks) == 1 else \
                f"these {len(asks)} requests, each as shown"
            self.app.push_screen(Confirm(f"Approve {what}?", body), answer)
            return
        asked = self.peek.asked
        if asked is None or asked[0] != self.table.selected:
            self.app.notify("the selected subagent awaits no approval", markup=False)
            return
        self._run(lambda: acts.decide(asked[0], asked[1], True))

    def action_deny(self) -> None:
        if self.marks:
            pending = self._targets(lambda r: r.view.pending_approval is not None)
            asks = [(r.id, str((r.view.pending_approval or {}).get("req_id"))) for r in pending]
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
                                            f"{fleet.task_text(row.view, 60)}",
                                    acts.why_no_messages(row.id)))

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
        self._want_all = not self._want_all
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

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "approve":
            self.action_approve()
        elif event.button.id == "deny":
            self.action_deny()


def _listing(rows: list[Row]) -> Text:
    return text_of([("", f"{r.id}  {fleet.state_text(r)}  {fleet.task_text(r.view, 80)}")
                    for r in rows])


def _request_lines(row: Row) -> list[tuple[str, str]]:
    from zapcli.render.common import approval_lines

    req = row.view.pending_approval or {}
    return [("bold", f"{row.id}: {fleet.task_text(row.view, 100)}"),
            *approval_lines(req), ("", "")]


