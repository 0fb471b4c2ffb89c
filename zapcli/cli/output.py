"""Writing to the terminal or a pipe: JSON documents, human text, errors.

Imports orjson; rich only when stdout is a terminal with colour allowed.
Human text escapes terminal control sequences so a subagent's output cannot
retitle or reprogram the caller's terminal (docs/explanation/rules.md#commands poll).
"""

from __future__ import annotations

import os
import sys

from zapcli.errors import ZapcliError
from zapcli.jsontext import escape_json
from zapcli.render.text import escape_controls, spell

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


def is_tty(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def text_from_stdin(what: str = "the task") -> str:
    """`-` given for a text: read it from standard input (at most 1 MB, UTF-8).
    At a terminal a line on stderr says so first, as `cat` does not: a person
    who typed `-` and sees nothing happen would think zapcli hung."""
    from zapcli.ops.tasktext import MAX_TASK_BYTES, decode_task

    if is_tty(sys.stdin):
        sys.stderr.write(f"zapcli: reading {what} from standard input; end it with Ctrl-D "
                         "(Ctrl-C to give up)\n")
        sys.stderr.flush()
    return decode_task(sys.stdin.buffer.read(MAX_TASK_BYTES + 1))


def color_allowed() -> bool:
    return is_tty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


class StdoutError(ZapcliError):
    """Standard output cannot be written (a full disk, /dev/full, a bad fd)."""

    code = "stdout"


def emit_bytes(data: bytes) -> None:
    """Bytes on stdout, as they are, flushed. Raises StdoutError when stdout
    cannot be written; BrokenPipeError (the reader left) passes through."""
    try:
        sys.stdout.flush()  # text written before, in order
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StdoutError(f"could not write to standard output: {exc.strerror or exc}") from None


def emit_json(doc: Any) -> None:
    """One JSON document on stdout (snake_case keys, ISO-8601 UTC timestamps;
    DEL, C1 controls and bidi overrides as \\u escapes, so no text in it can
    act on a terminal). Raises StdoutError when stdout cannot be written."""
    import orjson

    emit_bytes(escape_json(orjson.dumps(doc, option=orjson.OPT_INDENT_2, default=str)) + b"\n")


def emit_text(text: str) -> None:
    """Plain text on stdout, as is (UTF-8). Raises StdoutError."""
    emit_bytes(text.encode("utf-8", "surrogateescape"))


def emit(json: bool, doc: Any, lines: Any, result: Any) -> None:
    """A verb's answer: its renderer's JSON document (`doc(result)`) with
    --json, else its human lines (`lines(result)`)."""
    if json:
        emit_json(doc(result))
    else:
        emit_lines(lines(result))


def emit_lines(lines: list[tuple[str, str]], *, stderr: bool = False) -> None:
    """Print human lines (on stderr with `stderr`: what is said about an
    answer whose stdout is for a program, as `diff --name-only`'s header).
    Each item is (style, text); style is a rich style name or "" — used only
    on a colour terminal. Control characters are escaped here, whatever the
    renderer did: a line may hold text a model or an agent CLI chose, and
    nothing of it may drive the terminal."""
    stream = sys.stderr if stderr else sys.stdout
    if is_tty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb":
        from rich.console import Console
        from rich.text import Text

        console = Console(highlight=False, soft_wrap=True, stderr=stderr)
        for style, text in lines:
            console.print(Text(escape_controls(spell(text, "cli")), style=style or ""))
        return
    text = escape_controls(spell("".join(text + "\n" for _style, text in lines), "cli"))
    if stderr:
        sys.stderr.write(text)
        sys.stderr.flush()
    else:
        emit_text(text)


def error(message: str) -> None:
    """One line on stderr: `zapcli: error: <message>`."""
    line = f"zapcli: error: {escape_controls(message)}"
    if is_tty(sys.stderr) and not os.environ.get("NO_COLOR"):
        from rich.console import Console
        from rich.text import Text

        Console(stderr=True, highlight=False, soft_wrap=True).print(
            Text.assemble(("zapcli: error: ", "bold red"), escape_controls(message)))
    else:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


class Settled(Exception):  # noqa: N818 - not an error: the question was answered elsewhere
    """A question on the terminal that was decided elsewhere while it waited
    (`zapcli approve` from another terminal, top): what became of it."""

    def __init__(self, said: str):
        super().__init__(said)
        self.said = said


class _Answers:
    """The terminal's answers, read through a reader of our own on a copy of
    stdin's descriptor: a question left open on a thread when `zapcli run`
    ends (Ctrl-C, SIGTERM, SIGHUP) then holds this reader's lock, not
    sys.stdin's, which the interpreter takes at exit (a fatal error, exit -6,
    if a thread holds it). End of input is EOFError, as for input(). While
    a question waits, `settled()` is asked every quarter second whether it
    was decided elsewhere: then `Settled` (what was typed but not sent is
    dropped, so it answers no later question)."""

    _one: _Answers | None = None
    POLL_S = 0.25

    def __init__(self) -> None:
        self.fd = os.dup(sys.stdin.fileno())
        self.held = b""
        self.settled: Any = None  # () -> str | None, while a question waits
        self.asker = 0  # the thread asking it

    @classmethod
    def get(cls) -> _Answers:
        if cls._one is None:
            cls._one = cls()
        return cls._one

    def readline(self) -> str:
        import select

        while b"\n" not in self.held:
            if self.settled is not None:
                ready, _, _ = select.select([self.fd], [], [], self.POLL_S)
                said = None if ready else self.settled()
                if said:
                    self._drop_typed()
                    raise Settled(said)
                if not ready:
                    continue
            chunk = os.read(self.fd, 4096)
            if not chunk:
                if self.held:
                    break
                raise EOFError
            self.held += chunk
        line, sep, self.held = self.held.partition(b"\n")
        return (line + sep).decode("utf-8", "replace")

    def _drop_typed(self) -> None:
        self.held = b""
        try:
            import termios

            termios.tcflush(self.fd, termios.TCIFLUSH)
        except (ImportError, OSError):
            pass


def settling(wait_s: float = 1.0) -> None:
    """Before another thread writes to the terminal: if the question waiting
    there was decided elsewhere already, give its reader (which looks every
    `POLL_S`) the moment it takes to end the question's line with that, so
    what follows never lands on the question's line."""
    one = _Answers._one
    check = one.settled if one is not None else None
    if check is None or one is None:
        return
    import threading
    import time

    if one.asker == threading.get_ident() or not check():
        return
    end = time.monotonic() + wait_s
    while one.settled is check and time.monotonic() < end:
        time.sleep(0.02)


def confirm(question: str, settled: Any = None) -> bool:
    """Ask y/N at the terminal (rich markup in `question`), on stderr: stdout
    stays the command's (`zapcli run --json` prints one document there).
    EOFError when the terminal's input ended (Ctrl-D); `Settled` when
    `settled()` says it was decided elsewhere meanwhile. The callers ask one
    question at a time (under one lock)."""
    from rich.console import Console
    from rich.prompt import Confirm

    console = Console(stderr=True, emoji=False, highlight=False)  # `:x:` stays text
    import threading

    answers = _Answers.get()
    answers.settled, answers.asker = settled, threading.get_ident()
    try:
        return bool(Confirm.ask(question, default=False, console=console,
                                stream=answers))  # type: ignore[call-overload]
    finally:
        answers.settled = None


def ask_approval(summary: str, settled: Any = None) -> bool:
    """Ask the person at the terminal to approve what `summary` describes
    (`zapcli.approvaltext`), shown whole: one line when it fits
    (`allow bash: make test?`), else every line of it wrapped to the
    terminal above `allow the above?` — never cut. Controls, bidi overrides
    and reference markers are escaped (`render.text.shown`). When that is
    taller than the terminal, a warning above the question says so and
    repeats the lines it starts with (a start scrolled out of sight is not
    approved unseen). EOFError and `Settled` (`settled`) as `confirm`."""
    from rich.markup import escape

    from zapcli.render.text import cells, shown, wrapped

    try:
        size = os.get_terminal_size(sys.stderr.fileno())
        width, rows = size.columns or 80, size.lines or 24
    except (OSError, ValueError):
        width, rows = 80, 24
    flat = shown(summary)
    if "\n" not in flat and cells(flat) + 10 <= width:
        return confirm(f"[magenta]allow[/] {escape(flat)}?", settled)
    lines = wrapped(summary, width)
    sys.stderr.write("\n".join(lines) + "\n")
    if len(lines) + 1 > rows - TALL_MARGIN:
        # taller than the window: its start has scrolled out of sight; say so
        # where the person reads, with the lines it starts with
        sys.stderr.write(f"  ⚠ the above is {len(lines)} lines, more than this terminal shows "
                         f"({rows}): scroll up to read it all. It starts:\n"
                         + "\n".join(lines[:TALL_HEAD]) + "\n")
    sys.stderr.flush()
    return confirm("[magenta]allow the above?[/]", settled)


TALL_MARGIN = 2  # rows kept for the question and a line of context
TALL_HEAD = 3  # lines of a tall approval's start repeated next to its question


def warn(message: str) -> None:
    sys.stderr.write(f"zapcli: warning: {escape_controls(message)}\n")
    sys.stderr.flush()


def emit_each(json: bool, doc: Any, lines: Any, result: Any, shown: Any,
              missing: list[str]) -> int:
    """The answer of a command that answers each id on its own (poll, kill,
    rm), and its exit code: 1 when any id did not exist, else 0. An id that
    does not exist is said as every command says one — a `zapcli: error:`
    line on stderr (`missing`: one message each) — and said once: the human
    text is `lines(shown)`, the result without those ids (nothing on stdout
    when no id existed); the --json document (`doc(result)`) keeps each in
    its place. A tool call's text keeps it in place too (it has no stderr)."""
    if json:
        emit_json(doc(result))
    elif shown is not None:
        emit_lines(lines(shown))
    for message in missing:
        error(message)
    return 1 if missing else 0


def note(message: str) -> None:
    """One informational line on stderr: `zapcli: note: <message>`."""
    sys.stderr.write(f"zapcli: note: {escape_controls(message)}\n")
    sys.stderr.flush()
