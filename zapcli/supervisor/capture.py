"""Capped output capture: pipes pumped into `<id>.out` / `<id>.err`.

Imports `zapcli.redact`, `zapcli.results` (the cap and the marker line). Up to
1 MB everything is kept, as it comes. Past it the stream keeps its first and
its last part (about 512 KB each) with one marker line between saying how
many bytes were left out: a build's final summary survives a 15 MB log. The
head ends, and the tail starts, at a line boundary (a line longer than
`LINE_SLACK` is cut on a character). While it runs the file holds the first
1 MB; the last part is kept in memory and the file is rewritten to head,
marker and tail when the stream closes. The pipe keeps draining, so a chatty
child never blocks. Secrets are masked even when split across two reads.
"""

from __future__ import annotations

import os
import threading
import time

from zapcli.redact import StreamRedactor
from zapcli.results import CAP_BYTES, LINE_SLACK, MARKER_ROOM, PART_BYTES, left_out_line

READ_CHUNK = 64 * 1024
IDLE_RELEASE_S = 0.5  # bytes held back as a possible secret's start go out after this much quiet


class CappedFile:
    """Appends to one file up to `cap` bytes, then keeps the last part in
    memory; counts everything offered. `close` leaves head, marker and tail.

    `written` is the total bytes the producer wrote (after masking);
    `kept` what is on disk. Thread-safe.
    """

    def __init__(self, fd: int, secrets: list[bytes], cap: int = CAP_BYTES):
        self._fd = fd
        self._cap = cap
        self._part = min(PART_BYTES, cap // 2)
        self._redactor = StreamRedactor(secrets)
        self._lock = threading.Lock()
        self.written = 0
        self.kept = 0
        self.write_failed = False  # kept < cap because writing failed, not because of the cap
        self._last_write = 0.0
        self._timer: threading.Timer | None = None
        self._edge = bytearray()  # the head's last LINE_SLACK bytes: where it can end on a line
        self._last = bytearray()  # the stream's last bytes (past the head): the tail to keep

    def write(self, data: bytes) -> None:
        with self._lock:
            self._store(self._redactor.feed(data))
            self._last_write = time.monotonic()
            if self._redactor.pending and self._timer is None:
                self._arm(IDLE_RELEASE_S)

    def _arm(self, delay: float) -> None:
        self._timer = threading.Timer(delay, self._release_when_idle)
        self._timer.daemon = True
        self._timer.start()

    def _release_when_idle(self) -> None:
        """The last line of an idle subagent must appear (#14.1): after
        IDLE_RELEASE_S without a write, what is held back goes out."""
        with self._lock:
            self._timer = None
            quiet = time.monotonic() - self._last_write
            if quiet < IDLE_RELEASE_S:
                self._arm(IDLE_RELEASE_S - quiet)
            elif self._fd >= 0:
                self._store(self._redactor.finish())

    def _store(self, data: bytes) -> None:
        if not data:
            return
        self._remember(data)
        self.written += len(data)
        room = self._cap - self.kept
        if room <= 0 or self.write_failed:  # after a failed write: no gap in the middle
            return
        part = memoryview(data[:room])
        try:
            while part:  # os.write may take only some of it (a nearly full disk)
                n = os.write(self._fd, part)
                self.kept += n
                part = part[n:]
        except OSError:
            self.write_failed = True  # a full disk loses output, never the subagent

    def _remember(self, data: bytes) -> None:
        """Keep what a cut needs: the bytes just before the head's end, and
        the stream's last part (past the head, bounded in memory)."""
        at = self.written
        lo, hi = self._part - LINE_SLACK, self._part
        if at < hi and at + len(data) > lo:
            self._edge += data[max(lo - at, 0):hi - at]
        if at + len(data) > self._part:
            self._last += data[max(self._part - at, 0):]
            keep = self._part - MARKER_ROOM
            if len(self._last) > keep + LINE_SLACK:
                del self._last[:len(self._last) - keep]

    def _cut(self) -> None:
        """Past the cap: the file becomes head, one marker line, tail. The
        head ends after the last line end among its last LINE_SLACK bytes,
        else on a character."""
        edge, start = bytes(self._edge), self._part - len(self._edge)
        nl = edge.rfind(b"\n")
        head = start + (nl + 1 if nl >= 0 else _whole_chars(edge))
        tail = _tail_start(bytes(self._last[-(self._part - MARKER_ROOM):]))
        marker = left_out_line(self.written - head - len(tail))
        if nl < 0 and head:
            marker = b"\n" + marker  # a head cut inside a long line: the marker on its own line
        try:
            os.ftruncate(self._fd, head)
            self.kept = head
            rest = memoryview(marker + tail)  # smaller than what the truncate freed
            while rest:
                rest = rest[os.write(self._fd, rest):]
            self.kept = head + len(marker) + len(tail)
        except OSError:
            self.write_failed = True
            try:
                os.ftruncate(self._fd, head)
            except OSError:
                pass
        self._edge, self._last = bytearray(), bytearray()

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._store(self._redactor.finish())
            if self.written > self._cap and not self.write_failed and self._fd >= 0:
                self._cut()
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1

    @property
    def truncated(self) -> bool:
        return self.written > self.kept


def _whole_chars(raw: bytes) -> int:
    """len(raw), less an incomplete UTF-8 character at its end."""
    for back in range(1, min(4, len(raw)) + 1):
        byte = raw[-back]
        if byte < 0x80:
            break
        if byte >= 0xC0:  # a lead byte: is its character complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(raw) if back >= need else len(raw) - back
    return len(raw)


def _tail_start(last: bytes) -> bytes:
    """The tail: from the first line start within LINE_SLACK bytes, else
    from the first character start."""
    nl = last.find(b"\n", 0, LINE_SLACK)
    if nl >= 0:
        return last[nl + 1:]
    i = 0
    while i < min(3, len(last)) and 0x80 <= last[i] < 0xC0:
        i += 1
    return last[i:]


def pump(fd: int, sink: CappedFile) -> threading.Thread:
    """Drain pipe `fd` into `sink` on a daemon thread until EOF; closes `fd`."""

    def run() -> None:
        try:
            while True:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except OSError:
                    break
                if not chunk:
                    break
                sink.write(chunk)
        finally:
            os.close(fd)

    thread = threading.Thread(target=run, name=f"pump-{fd}", daemon=True)
    thread.start()
    return thread


def feed(fd: int, data: bytes, name: str = "stdin-feed") -> threading.Thread:
    """Write `data` into pipe `fd` from its own thread (it may exceed the pipe
    buffer while the child fills its own output) and close it after the last
    byte; a child that stopped reading, or never reads, is not an error."""

    def write() -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            pass
        finally:
            try:
                os.close(fd)
            except OSError:
                pass

    thread = threading.Thread(target=write, name=name, daemon=True)
    thread.start()
    return thread
