"""Capped output capture (SPEC §5): pipes pumped into `<id>.out` / `<id>.err`.

Imports `zapcli.redact`. The first 1 MB is kept; bytes past the cap are counted
and dropped while the pipe keeps draining, so a chatty child never blocks.
Secrets are masked even when split across two reads.
"""

from __future__ import annotations

import os
import threading
import time

from zapcli.redact import StreamRedactor

CAP_BYTES = 1024 * 1024
READ_CHUNK = 64 * 1024
IDLE_RELEASE_S = 0.5  # bytes held back as a possible secret's start go out after this much quiet


class CappedFile:
    """Appends to one file up to `cap` bytes; counts everything offered.

    `written` is the total bytes the producer wrote (after masking);
    `kept` what is on disk. Thread-safe.
    """

    def __init__(self, fd: int, secrets: list[bytes], cap: int = CAP_BYTES):
        self._fd = fd
        self._cap = cap
        self._redactor = StreamRedactor(secrets)
        self._lock = threading.Lock()
        self.written = 0
        self.kept = 0
        self.write_failed = False  # kept < cap because writing failed, not because of the cap
        self._last_write = 0.0
        self._timer: threading.Timer | None = None

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

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._store(self._redactor.finish())
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = -1

    @property
    def truncated(self) -> bool:
        return self.written > self.kept


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
