"""An agent CLI's stdout, line by line, into trail records (docs/explanation/rules.md#agent-clis, C20).

Imports orjson, `zapcli.backends.clis.base` (types), and for types only the
writer and capture. Bytes are split on `\\n` only, a trailing `\\r` is dropped,
each complete line is decoded whole (invalid UTF-8 replaced, never a crash)
and parsed as JSON; a line that is not JSON becomes one `diagnostic` showing
its first bytes and the stream goes on. No line cap below `MAX_LINE` (64 MiB).
The pump only hands records to the batched trail writer and the capped
stdout, so it keeps up with a burst at exit.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from zapcli.backends.clis.base import EventParser

TYPE_CHECKING = False
if TYPE_CHECKING:
    from zapcli.budget.meter import Meter
    from zapcli.supervisor.capture import CappedFile
    from zapcli.trail.writer import TrailWriter

_loads = orjson.loads
_DecodeError = orjson.JSONDecodeError
READ_CHUNK = 256 * 1024
MAX_LINE = 64 * 1024 * 1024
SHOWN = 200  # bytes of a non-JSON line shown in its diagnostic


def decode(line: bytes) -> Any:
    """One line as JSON. Raises ValueError when it is not JSON."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        text = line.decode("utf-8", "replace")  # invalid UTF-8 inside a string
        return orjson.loads(text)


class Sink:
    """Where a parser's records go: the trail, and visible text to stdout
    (each turn's text on its own lines). Each `usage` record goes through the
    subagent's meter (`zapcli.budget.meter.Meter`: priced when the CLI says
    no cost, counted); with a budget, each call the CLI says is checked
    against it as it comes (`over`: why the budget stops the work, once)."""

    def __init__(self, writer: TrailWriter, out: CappedFile, meter: Meter | None = None,
                 parser: EventParser | None = None):
        from zapcli.budget.meter import Meter

        self.writer, self.out = writer, out
        self.meter = meter or Meter(None)
        self.parser = parser
        self.checks = self.meter.max_tokens is not None or self.meter.max_cost is not None
        self.over: str | None = None
        self.passed_it = threading.Event()  # set with `over`: the runner ends the work now
        self.on_usage: Callable[[dict[str, Any]], None] | None = None  # each usage record, priced
        self.at_line_start = True
        self.tail = ""  # the last text written to stdout (to end it with the report)
        self.started: dict[str, float] = {}  # call_id -> when its tool_call came

    @property
    def tokens(self) -> int:
        return self.meter.tokens

    def __call__(self, rtype: str, fields: dict[str, Any]) -> None:
        if rtype == "text":
            delta = str(fields.get("delta", ""))
            if delta:
                self.out.write(delta.encode("utf-8", "replace"))
                self.at_line_start = delta.endswith("\n")
                self.tail = (self.tail + delta)[-4096:]
        elif rtype == "tool_call":
            self.started[str(fields.get("call_id"))] = time.monotonic()
            if not self.at_line_start:
                self.out.write(b"\n")
                self.at_line_start = True
        elif rtype == "tool_result" and fields.get("duration_ms") is None:
            began = self.started.pop(str(fields.get("call_id")), None)
            if began is not None:
                fields = {**fields, "duration_ms": int((time.monotonic() - began) * 1000)}
        elif rtype == "usage":
            if "cost" in fields and "cost_usd" not in fields:
                fields = dict(fields)
                fields["cost_usd"] = fields.pop("cost")
            fields = self.meter.record(fields)  # the CLI says no cost: the model's price (docs/explanation/rules.md#budgets)
            if self.on_usage is not None:
                self.on_usage(fields)
        self.writer.append(rtype, fields)
        if rtype in CALL_RECORDS:
            self.check()

    def check(self) -> None:
        """With a budget: stop the work if what was said passed it — the CLI's
        tree frozen at once (no further call while the runner ends it)."""
        if not self.checks or self.over is not None:
            return
        self.over = self.meter.passed(self.parser.unreported() if self.parser else ())
        if self.over is not None:
            from zapcli.supervisor.kill import freeze_children

            freeze_children()
            self.passed_it.set()

    def record_unreported(self) -> None:
        """The work ends before the CLI reported the calls it said: what they
        spent is recorded as far as it was said (marked estimated), so every
        surface counts it."""
        self.checks = False  # the end is decided: nothing more to check (nor from this thread)
        for fields in self.parser.unreported() if self.parser else ():
            self("usage", {**fields, "estimated": True})

    def end_with(self, report: str) -> None:
        """Make stdout end with the report (once), like the built-in agent's."""
        if report.strip() and not self.tail.rstrip().endswith(report.strip()[-2000:]):
            self.out.write((("" if self.at_line_start else "\n") + report).encode(
                "utf-8", "replace"))
            self.at_line_start = report.endswith("\n")
        if not self.at_line_start:
            self.out.write(b"\n")
            self.at_line_start = True


CALL_RECORDS = frozenset({"usage", "text", "thinking", "tool_call"})  # a model call said something


def _int(v: Any) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


FOLLOW_S = 0.02  # how often a followed output file is read while the CLI runs


class LinePump:
    """Reads the CLI's stdout on a thread; each line → parser → sink.
    `on_event` runs after every parsed line while it is set (the session
    record); the caller clears it when it needs no more calls."""

    def __init__(self, fd: int, parser: EventParser, sink: Callable[[str, dict[str, Any]], None],
                 on_event: Callable[[], None] | None = None, done: threading.Event | None = None):
        self.fd, self.parser, self.sink, self.on_event = fd, parser, sink, on_event
        self.done = done  # reading a file the CLI writes: EOF ends the pump once this is set
        self.lines = 0
        self.not_json = 0
        self.events = 0  # JSON lines, and of them the kinds the parser does not know
        self.unknown: dict[str, int] = {}
        self.largest = 0
        self.failed: str | None = None
        self.thread = threading.Thread(target=self._run, name="cli-stdout", daemon=True)

    def start(self) -> LinePump:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            self.pump()
        except Exception as exc:  # a parser bug must not lose the run: say so, keep draining
            self.failed = f"{type(exc).__name__}: {exc}"
            self.sink("diagnostic", {"dimension": "backend", "name": "parser",
                                     "message": f"reading the CLI's output failed: {self.failed}"})
            while os.read(self.fd, READ_CHUNK):
                pass
        finally:
            os.close(self.fd)

    def pump(self) -> None:
        pieces: list[bytes] = []
        held = 0
        while True:
            chunk = os.read(self.fd, READ_CHUNK)
            if not chunk:
                if self.done is None:
                    break
                if self.done.is_set():  # it has exited: what it wrote is all there
                    chunk = os.read(self.fd, READ_CHUNK)
                    if not chunk:
                        break
                else:
                    time.sleep(FOLLOW_S)
                    continue
            if b"\n" not in chunk:
                held += len(chunk)
                if held <= MAX_LINE:
                    pieces.append(chunk)
                continue
            lines = chunk.split(b"\n")
            pieces.append(lines[0])
            self._line(b"".join(pieces), held + len(lines[0]))
            for line in lines[1:-1]:
                self._line(line, len(line))
            pieces, held = [lines[-1]], len(lines[-1])
        if held:
            self._line(b"".join(pieces), held)

    def _line(self, line: bytes, size: int) -> None:
        if size > self.largest:
            self.largest = size
        if size > MAX_LINE:
            self.sink("diagnostic", {"dimension": "backend", "name": "line_too_long",
                                     "message": f"a line of {size} bytes was dropped (over "
                                                f"{MAX_LINE} bytes): {line[:SHOWN]!r}"})
            return
        if line[-1:] == b"\r":
            line = line[:-1]
        if not line:
            return
        self.lines += 1
        try:
            event = _loads(line)
        except _DecodeError:
            try:
                event = _loads(line.decode("utf-8", "replace"))  # invalid UTF-8 in a string
            except _DecodeError:
                self._not_json(line, size)
                return
        self.events += 1
        if not self.parser.recognises(event):
            kind = str(event.get("type") if isinstance(event, dict) else type(event).__name__)[:60]
            if kind in self.unknown or len(self.unknown) < 8:
                self.unknown[kind] = self.unknown.get(kind, 0) + 1
            else:
                self.unknown["…"] = self.unknown.get("…", 0) + 1
        records = self.parser.feed(event)
        if records:
            sink = self.sink
            for rtype, fields in records:
                sink(rtype, fields)
        if getattr(self.parser, "call_began", False):  # a call said as it starts, nothing recorded
            self.parser.call_began = False  # type: ignore[attr-defined]
            check = getattr(self.sink, "check", None)
            if check is not None:
                check()
        if self.on_event is not None:
            self.on_event()

    def drift(self) -> str | None:
        """What changed in the stream when the parser knew none of its events,
        or no more than half of them (from four on); None when it knew enough.
        A few unknown kinds among many known ones are a newer CLI's additions,
        passed over."""
        odd = sum(self.unknown.values())
        known = self.events - odd
        if not odd or (known and (self.events < 4 or known * 2 > self.events)):
            return None
        kinds = ", ".join(f"{k} ×{n}" for k, n in self.unknown.items())
        return f"of its {self.events} events zapcli knew {known} (other kinds: {kinds})"

    def _not_json(self, line: bytes, size: int) -> None:
        if line.isspace():
            self.lines -= 1
            return
        self.not_json += 1
        shown = line[:SHOWN].decode("utf-8", "replace")
        self.sink("diagnostic", {"dimension": "backend", "name": "not_json",
                                 "message": f"a line that is not JSON ({size} bytes): {shown}"})


class TailPump:
    """Drains the CLI's stderr into the capped `.err` file, keeping its last
    lines for the outcome (a CLI that died says why there)."""

    def __init__(self, fd: int, err: CappedFile, keep: int = 64 * 1024):
        self.fd, self.err = fd, err
        self._tail: deque[bytes] = deque()
        self._size, self._keep = 0, keep
        self.thread = threading.Thread(target=self._run, name="cli-stderr", daemon=True)

    def start(self) -> TailPump:
        self.thread.start()
        return self

    def _run(self) -> None:
        try:
            while True:
                try:
                    chunk = os.read(self.fd, 64 * 1024)
                except OSError:
                    break
                if not chunk:
                    break
                self.err.write(chunk)
                self._tail.append(chunk)
                self._size += len(chunk)
                while self._size - len(self._tail[0]) >= self._keep:
                    self._size -= len(self._tail.popleft())
        finally:
            os.close(self.fd)

    def text(self) -> str:
        return b"".join(self._tail)[-self._keep:].decode("utf-8", "replace")
