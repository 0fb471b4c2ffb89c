"""`top`'s screens over the table: a yes/no question (kill, rm, approving
several requests — each shown whole), the reason a denial tells the model,
and attach: a subagent's output followed full screen, with a line to send
it a message.

Imports Textual and rich, `zapcli.render.text`, `zapcli.tui.data` (the
output's bytes), `zapcli.tui.acts` (send). Each modal answers through
`dismiss`: True/False, the reason (None: cancelled).
"""

from __future__ import annotations

import os

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, Log, Static

from zapcli.errors import ZapcliError
from zapcli.render.text import escape_controls
from zapcli.trail import store
from zapcli.tui import acts

FOLLOW_S = 0.25
ATTACH_LINES = 5000  # lines the attach view keeps on screen


class Confirm(ModalScreen[bool]):
    """`question` and, below it, `body` (scrolls: shown whole); y / n."""

    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > Vertical { width: 90%; max-width: 120; height: auto; max-height: 90%;
                         border: thick $warning; background: $surface; padding: 1 2; }
    Confirm #body { height: auto; max-height: 24; }
    Confirm Horizontal { height: auto; margin-top: 1; }
    Confirm Button { margin-right: 2; }
    """

    def __init__(self, question: str, body: Text | None = None) -> None:
        super().__init__()
        self.question, self.body = question, body

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.question, style="bold"), id="question")
            if self.body is not None:
                with VerticalScroll(id="body"):
                    yield Static(self.body)
            with Horizontal():
                yield Button("Yes (y)", id="yes", variant="warning")
                yield Button("No (n)", id="no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class Reason(ModalScreen["str | None"]):
    """The reason a denial tells the model (Enter), or None (Esc)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    Reason { align: center middle; }
    Reason > Vertical { width: 90%; max-width: 110; height: auto; border: thick $error;
                        background: $surface; padding: 1 2; }
    """

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"))
            yield Input(placeholder="why (the model is told); Enter denies, Esc cancels", id="reason")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class Attach(Screen[None]):
    """Follow `sid`'s output full screen; Enter in the line below sends what
    was typed (`zapcli send`) — no line when nothing can reach it (`deaf`:
    why, in the title and a notification); Esc detaches back to the table."""

    BINDINGS = [Binding("escape", "detach", "Detach"),
                Binding("ctrl+l", "clear", "Clear", show=False)]
    DEFAULT_CSS = """
    Attach #attach-title { height: 1; background: $primary; color: $text; text-style: bold; }
    Attach Log { height: 1fr; }
    Attach Input { dock: bottom; margin-bottom: 1; }
    """

    def __init__(self, sid: str, title: str, deaf: str | None = None) -> None:
        super().__init__()
        self.sid, self.title_text = sid, title
        self.deaf = deaf  # why no message can reach it: no box is offered then
        self.read_to = 0
        self._partial = b""
        self.sent = False  # a message went from here: its fate is watched
        self._looked = 0.0

    def compose(self) -> ComposeResult:
        why = f" — {self.deaf}, so there is no message line" if self.deaf else ""
        yield Static(Text(f" attached to {self.title_text}{why} — Esc detaches"),
                     id="attach-title")
        yield Log(max_lines=ATTACH_LINES, auto_scroll=True, id="attach-log")
        if not self.deaf:
            yield Input(placeholder="message for its model (zapcli send): Enter sends it before "
                                    "its next model call, if it makes one", id="attach-input")
        yield Footer()

    def on_mount(self) -> None:
        self.pull()
        self.set_interval(FOLLOW_S, self.pull)
        if self.deaf:
            self.app.notify(f"{self.sid[-8:]}: {self.deaf}; following its output only")
        else:
            self.query_one("#attach-input", Input).focus()

    def pull(self) -> None:
        """Show what its output gained since the last look (and, once a
        message went from here, whether the work ended without reading it)."""
        if self.sent:
            self._fate()
        path = store.path_for(self.sid, ".out")
        try:
            fd = store.open_read(path)
        except OSError:
            return
        try:
            size = os.fstat(fd).st_size
            if size < self.read_to:  # replaced: start again
                self.read_to, self._partial = 0, b""
            if size == self.read_to:
                return
            data = os.pread(fd, min(size - self.read_to, 1 << 20), self.read_to)
        finally:
            os.close(fd)
        self.read_to += len(data)
        data = self._partial + data
        whole, _, self._partial = data.rpartition(b"\n")
        if whole or not self._partial:
            log = self.query_one("#attach-log", Log)
            log.write_lines(escape_controls(line) for line in
                            whole.decode("utf-8", "replace").split("\n"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        event.input.value = ""
        log = self.query_one("#attach-log", Log)
        self.app.run_worker(lambda: self._send(text, log), thread=True, group="send")

    def _fate(self) -> None:
        """Once a second: the work ended with a message sent from here unread?
        Said in the log once (as poll says it), never silently lost."""
        import time

        if time.monotonic() - self._looked < 1.0:
            return
        self._looked = time.monotonic()
        from zapcli.lifecycle.observe import observe

        try:
            view = observe(self.sid)
        except (ZapcliError, OSError):
            return
        if not view.terminal:
            return
        self.sent = False
        if view.undelivered_messages:
            from zapcli.render.common import undelivered_line

            said = f"→ it ended ({view.status}). {undelivered_line(view, '')[1]}"
            self.query_one("#attach-log", Log).write_line(escape_controls(said))
            self.app.notify(said, severity="warning")

    def _send(self, text: str, log: Log) -> None:
        done = acts.send(self.sid, text)
        if done.ok:
            self.sent = True
        line = (f"→ sent: {escape_controls(text)} ({done.message})" if done.ok
                else f"→ not sent: {done.message}")
        self.app.call_from_thread(log.write_line, line)
        self.app.call_from_thread(self.app.notify, done.message,
                                  severity="information" if done.ok else "error")

    def action_clear(self) -> None:
        self.query_one("#attach-log", Log).clear()

    def action_detach(self) -> None:
        self.app.pop_screen()
