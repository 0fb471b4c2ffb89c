"""The child's batched trail writer (docs/explanation/rules.md#the-trail write discipline).

Imports `zapcli.trail.records`, `zapcli.trail.store`. `append` only queues a
tuple (no I/O, no formatting) and returns; a background thread encodes and
writes the queue every 250 ms. `write_sync` drains the queue and writes one
record with fsync: used for `report` and terminal `status` so a result is never
lost. A full disk (ENOSPC) drops records, counts them and says so in a
`diagnostic` once space returns; a terminal status that cannot be written
goes into the space the runner reserved (`zapcli.trail.endslot`). A trail
that grows past `trim.TRIM_OVER_BYTES` is trimmed by the batch that took it
there (`zapcli.trail.trim`), so it stays bounded while it runs.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections import deque
from pathlib import Path

from zapcli.trail import endslot, jsonl, reader, records, store
from zapcli.trail.model import Outcome

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

FLUSH_INTERVAL_S = 0.25
WAKE_MARGIN_S = 0.005  # a timed wait can wake a little late
_DELTAS = ("text", "thinking")  # merged within a batch
_now = time.time


class TrailWriter:
    """Appends records to one trail. Thread-safe; one instance per process.

    `start_seq` continues the trail's counter (the spawner used 0 and 1).
    """

    def __init__(self, path: Path, *, start_seq: int, secrets: list[bytes],
                 interval_s: float = FLUSH_INTERVAL_S, trim_over: int | None = None):
        self.path = path
        self._fd = store.open_append(path)
        self._secrets = secrets
        # Flat: type, fields, time, type, ... Each append adds its three at once
        # (deque.extend of a tuple runs without a thread switch) and keeps no
        # new object tracked by the garbage collector alive: a queue of tuples
        # made the collector's full passes over a big heap most of an append.
        self._queue: deque[Any] = deque()
        self._push = self._queue.extend  # `append` is called per record: one lookup less
        self._seq = start_seq
        self._lock = threading.Lock()  # serialises file writes and seq
        self._torn = store.ends_torn(self._fd)
        self._known_size = -1  # file size after our last write; -1 = check now
        self.dropped = 0  # records lost to a full disk, not yet reported
        self.dropped_total = 0
        self._interval = interval_s
        self._trim_over = trim_over  # None: trim.TRIM_OVER_BYTES
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trail-writer", daemon=True)
        self._thread.start()

    def append(self, rtype: str, fields: dict[str, Any]) -> None:
        """Queue a record; never blocks on disk. Fields must be JSON-able."""
        self._push((rtype, fields, _now()))  # the tuple is freed at once

    def _run(self) -> None:
        """A batch every interval, timed so that a record waits at most one
        interval from its append until it is written: the next batch is
        taken one interval after the last one was, less the time writing
        the last one took (else each flush would add its own duration) and
        a margin for this thread's wake-up on a busy machine."""
        began, took = time.monotonic(), 0.0
        margin = min(WAKE_MARGIN_S, self._interval / 10)
        beat = began
        while not self._stop.wait(max(began + self._interval - took - margin - time.monotonic(), 0.0)):
            began = time.monotonic()
            self.flush()
            if began - beat >= endslot.HEARTBEAT_S:  # alive: how long it ran, should it die
                endslot.beat(self.path)
                beat = began
            took = time.monotonic() - began

    def _encode_queue(self) -> tuple[bytes, int]:
        """Pop the queue into bytes; merge consecutive text/thinking deltas."""
        queue = self._queue
        items = [queue.popleft() for _ in range(len(queue))]  # appends may go on meanwhile
        batch: list[Any] = []  # flat too
        merged: dict[str, Any] | None = None  # the fields of the delta being merged into
        it = iter(items)
        for rtype, fields, ts in zip(it, it, it, strict=True):
            if rtype in _DELTAS and len(fields) == 1:
                if merged is not None and rtype == batch[-3]:
                    merged["delta"] += fields.get("delta", "")
                    continue
                merged = dict(fields)
                batch += (rtype, merged, ts)
                continue
            merged = None
            batch += (rtype, fields, ts)
        if not batch:
            return b"", 0
        count = len(batch) // 3
        at = iter(batch)
        data = records.lines(zip(at, at, at, strict=True), self._seq, self._secrets)
        self._seq += count
        return data, count

    def _sync_with_others(self) -> None:
        """Others append too (kill, approve, send, observers). If the file grew
        behind our back, continue after their highest seq and end a fragment
        they may have left, so seqs stay increasing and no line is glued."""
        size = os.fstat(self._fd).st_size
        if size == self._known_size:
            return
        self._torn = store.ends_torn(self._fd)
        tail = os.pread(self._fd, min(size, 65536), max(size - 65536, 0))
        for line in tail.split(b"\n")[1:] if size > 65536 else tail.split(b"\n"):
            if not line:  # after the last newline: nothing to parse (a failed parse imports json)
                continue
            try:
                seq = jsonl.loads(line).get("seq")
            except (ValueError, AttributeError):
                continue
            if isinstance(seq, int) and seq > self._seq:
                self._seq = seq
        self._known_size = size

    def _line(self, rtype: str, fields: dict[str, Any], ts: float) -> bytes:
        self._seq += 1
        return records.line(rtype, self._seq, fields, ts, self._secrets)

    def _note(self) -> bytes:
        """The `diagnostic` saying how many records a full disk dropped, to
        go before the next lines (encoded first, so seqs stay in order)."""
        if not self.dropped:
            return b""
        return self._line("diagnostic", {"dimension": "trail", "name": "disk_full", "message":
                                         f"{self.dropped} records were dropped: the disk was full"},
                          time.time())

    def _write(self, data: bytes, count: int, after: int, *, fsync: bool) -> bool:
        """Write encoded lines, numbered after seq `after`. On ENOSPC none of
        them lands (`write_whole`): `count` of them are dropped and counted,
        and their seqs are given again, so a dropped record leaves no gap in
        the seqs — the note written once there is room says how many."""
        if self._torn:
            data = b"\n" + data
        try:
            store.write_whole(self._fd, data, sync=fsync)
            self._known_size = os.fstat(self._fd).st_size
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            self._torn = store.ends_torn(self._fd)
            self._seq = after
            self.dropped += count
            self.dropped_total += count
            return False
        self._torn = False
        self.dropped = 0
        return True

    def flush(self) -> None:
        """Write everything queued so far (called by the thread every 250 ms),
        and the note of what a full disk dropped as soon as there is room."""
        if not self._queue and not self.dropped:
            return
        # The trail's lock before our own (the order everywhere): appends of
        # other processes and threads never interleave with ours.
        with store.locked(self.path), self._lock:
            if not self._queue and not self.dropped:
                return
            self._sync_with_others()
            after = self._seq
            note = self._note()
            data, count = self._encode_queue()
            if self._write(note + data, count, after, fsync=False):
                self._trim_if_over()

    def _trim_if_over(self) -> None:
        """Trim the trail once it has grown past the limit (under both locks,
        held by the caller), then append to the new file."""
        from zapcli.trail import trim

        over = trim.TRIM_OVER_BYTES if self._trim_over is None else self._trim_over
        if self._known_size <= over:
            return
        try:
            trim.trim(self.path, over=over, keep=min(trim.KEEP_BYTES, over // 2))
        except OSError:  # no room for the copy: it stays as it is; the next batch tries again
            return
        fd, self._fd = self._fd, store.open_append(self.path)
        os.close(fd)
        self._known_size = -1  # the next write reads the marker's seq and the new size

    def write_sync(self, rtype: str, fields: dict[str, Any], *, retry_s: float = 0.0) -> bool:
        """Flush the queue, then write `rtype` and fsync before returning.

        With `retry_s` a full disk is retried for that many seconds (the final
        report is retried until the exit). Returns False if it never landed.
        """
        give_up = time.monotonic() + retry_s
        with store.locked(self.path), self._lock:
            self._sync_with_others()
            after = self._seq
            note = self._note()
            data, count = self._encode_queue()
            ts = time.time()
            while True:
                if self._write(note + data + self._line(rtype, fields, ts), count, after, fsync=True):
                    return True
                data, count = b"", 0  # the queue's records are dropped; this one is retried
                if time.monotonic() >= give_up:
                    self.dropped += 1  # never landed: counted like the others
                    self.dropped_total += 1
                    return False
                time.sleep(0.2)
                after = self._seq
                note = self._note()

    def end(self, outcome: Outcome, *, retry_s: float = 0.0, **extra: Any) -> bool:
        """The runner's own end: flush, then write the terminal `status` (fsync)
        unless a terminal status is already recorded — the first one is final
        (`trail.ending.end` is everyone else's). Returns True when this status is it."""
        fields: dict[str, Any] = {"status": str(outcome.status), "exit_code": outcome.exit_code,
                                  "reason": outcome.reason, "mono": time.monotonic(),
                                  **(outcome.extra or {}), **extra}
        with store.locked(self.path):
            if reader.first_terminal(self.path) is not None:
                self.flush()
                endslot.release(self.path)
                return False
            written = self.write_sync("status", fields, retry_s=retry_s)
        if written:
            endslot.release(self.path)
            from zapcli.trail import finish

            finish.fire(self.path)  # its on-finish command, once over everyone
            if fields.get("usage_limit"):  # it ended on an account's usage limit (issue 30)
                from zapcli.trail import events

                events.emit(self.path, "usage_limited")
            return True
        # The disk stayed full: the outcome goes into the space reserved at
        # start, and the first observer records it (never `lost`), with the
        # note of what else was dropped.
        self.dropped -= 1  # the status itself is not lost
        self.dropped_total -= 1
        kept = {**fields, "ts": records.iso_utc()}  # its time, not the recovery's
        endslot.keep(self.path, {**kept, "dropped_records": self.dropped} if self.dropped else kept)
        return False

    def close(self) -> None:
        """Stop the thread, write what is queued, close the file."""
        self._stop.set()
        self._thread.join(timeout=5)
        self.flush()
        os.close(self._fd)
