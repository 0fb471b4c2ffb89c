"""The peek pane: the selected subagent at a glance — its state and task,
its pending approval shown whole with Approve and Deny in place, the tail
of its output and its last trail records.

Imports Textual and rich, `zapcli.render` (the words `poll` and `replay`
use: the approval's whole text through `render.common.approval_lines`,
which shows `zapcli.approvaltext`'s description escaped and never cut),
`zapcli.tui.fleet`, `zapcli.tui.data`. `asked` is the request on screen:
a decision is made for that request id, so a request that changed while
the person read the old one is never approved unseen.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Static

from zapcli.render.common import (
    approval_lines,
    reason_line,
    status_phrase,
    tokens_text,
    undelivered_line,
)
from zapcli.render.replay import record_line
from zapcli.render.text import escape_controls, shown
from zapcli.tui import fleet
from zapcli.tui.data import Source
from zapcli.tui.fleet import Row

OUTPUT_LINES = 12
TRAIL_RECORDS = 8


def text_of(lines: list[tuple[str, str]]) -> Text:
    out = Text()
    for i, (style, line) in enumerate(lines):
        out.append(line, style=style or "")
        if i < len(lines) - 1:
            out.append("\n")
    return out


def head_lines(row: Row) -> list[tuple[str, str]]:
    v = row.view
    lines = [("bold", f"{v.id}  {status_phrase(v)}")]
    reason = reason_line(v)
    if reason:
        lines.append(reason)
    if v.undelivered_messages:
        lines.append(undelivered_line(v, ""))
    tree = fleet.worktree_text(v, full=True)
    lines.append(("dim", f"backend {fleet.backend_text(v)} · executor {row.executor} · session "
                         f"{escape_controls(v.session)}" + (f" · worktree {tree}" if tree != "-" else "")))
    if v.parent:
        lines.append(("dim", f"spawned by {v.parent}"))
    if v.input_tokens or v.output_tokens:
        lines.append(("dim", f"tokens {tokens_text(v)}" + (f" in {v.calls} model call{'s' if v.calls != 1 else ''}" if v.calls else "")))
    lines.append(("", "task: " + shown(" ".join(v.task.split()))))
    return lines


class Peek(Vertical):
    """`show(row, source)` fills it; `asked` is (id, req_id) of the request
    shown, or None."""

    DEFAULT_CSS = """
    Peek { height: 1fr; border-top: solid $secondary; }
    Peek #ask { height: auto; border: round magenta; padding: 0 1; display: none; }
    Peek #ask.on { display: block; }
    Peek #ask-buttons { height: auto; }
    Peek #ask-buttons Button { margin-right: 2; min-width: 14; }
    Peek .section { color: $text-muted; text-style: bold; }
    """

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.asked: tuple[str, str] | None = None
        self.sid: str | None = None
        self._head, self._head_lines = "", 0

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="peek-scroll"):
            yield Static(id="peek-head")
            with Vertical(id="ask"):
                yield Static(id="ask-text")
                with Horizontal(id="ask-buttons"):
                    yield Button("Approve (a)", id="approve", variant="success")
                    yield Button("Deny (d)", id="deny", variant="error")
            yield Static("output", classes="section", id="out-title")
            yield Static(id="peek-out")
            yield Static("trail", classes="section")
            yield Static(id="peek-trail")

    def tick(self, row: Row) -> None:
        """Time passed for the row shown: its head line again (elapsed), no file read."""
        if row.id != self.sid:
            return
        lines = head_lines(row)
        text = text_of(lines)
        if text.plain != self._head:
            head = self.query_one("#peek-head", Static)
            head.update(text, layout=len(lines) != self._head_lines)
            self._head, self._head_lines = text.plain, len(lines)

    def show(self, row: Row | None, source: Source) -> None:
        head = self.query_one("#peek-head", Static)
        ask = self.query_one("#ask", Vertical)
        if row is None:
            self.sid, self.asked = None, None
            head.update(Text("nothing selected", style="dim"))
            ask.remove_class("on")
            self.query_one("#peek-out", Static).update("")
            self.query_one("#peek-trail", Static).update("")
            return
        self.sid = row.id
        lines = head_lines(row)
        text = text_of(lines)
        head.update(text)
        self._head, self._head_lines = text.plain, len(lines)
        req = row.view.pending_approval
        if req is not None:
            self.asked = (row.id, str(req.get("req_id")))
            self.query_one("#ask-text", Static).update(text_of(
                approval_lines(req, indent="") + [("dim", "a approves it · d denies it, with a "
                                                          "reason the model is told")]))
            ask.add_class("on")
        else:
            self.asked = None
            ask.remove_class("on")
        out, size = source.output_tail(row.id)
        tail = [escape_controls(line) for line in out.splitlines()[-OUTPUT_LINES:]]
        self.query_one("#out-title", Static).update(
            f"output (last {len(tail)} lines of {size:,} bytes)" if size else "output (none yet)")
        self.query_one("#peek-out", Static).update(Text("\n".join(tail)))
        recs = source.last_records(row.id, TRAIL_RECORDS)
        self.query_one("#peek-trail", Static).update(text_of([record_line(r) for r in recs]))
