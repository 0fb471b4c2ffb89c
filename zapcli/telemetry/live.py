"""Live export: a runner (or `zapcli run`) follows its own trail on a thread
and sends each span as the trail ends it.

Imports `zapcli.telemetry` (spans, otlp), `zapcli.trail.store`, orjson. The
agent thread never waits for it: it only appends records, as always; this
thread reads what the batched writer put on disk, builds spans from it (the
same code `zapcli trace export` uses), and hands them to the SDK's batch
processor. A collector that is down loses nothing (the trail stays, and
`zapcli trace export` sends it later) and never changes the subagent.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson

from zapcli.telemetry.spans import SpanBuilder
from zapcli.trail import store

POLL_S = 1.0
CLOSE_WAIT_S = 3.0  # at the end, how long delivery may hold the exiting process


class Live:
    def __init__(self, path: Path, nid: str, exporter: Any, poll_s: float = POLL_S):
        self.path, self.nid, self.exporter, self.poll_s = path, nid, exporter, poll_s
        self._offset = 0
        self._rest = b""
        self._ino: int | None = None  # the file followed: a trim replaces it (trail.trim)
        self._seen = -1  # the highest seq fed: a replaced file is read again past it
        self.builder: SpanBuilder | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="otel-follow", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.step()

    def step(self) -> None:
        """Read what the trail gained since the last step and send the spans it ends."""
        with self._lock:
            try:
                fd = store.open_read(self.path)
                try:
                    st = os.fstat(fd)
                    if st.st_ino != self._ino or st.st_size < self._offset:
                        # trimmed while it runs: a new file, read again from its start
                        self._ino, self._offset, self._rest = st.st_ino, 0, b""
                    data = os.pread(fd, max(st.st_size - self._offset, 0), self._offset)
                finally:
                    os.close(fd)
            except OSError:
                return
            self._offset += len(data)
            lines = (self._rest + data).split(b"\n")
            self._rest = lines.pop()
            for line in lines:
                self._feed(line)

    def _feed(self, line: bytes) -> None:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if not isinstance(rec, dict):
            return
        seq = rec.get("seq")
        if isinstance(seq, int):
            if seq <= self._seen:  # already fed, before the trail was trimmed
                return
            self._seen = seq
        if self.builder is None:
            if rec.get("type") == "spawn":
                self.builder = SpanBuilder(self.nid, rec)
            return
        spans = self.builder.feed(rec)
        if spans:
            try:
                self.exporter.send(self.builder.agent, spans)
            except Exception:  # noqa: BLE001 - never the subagent's problem
                pass

    def stop(self, wait_s: float = CLOSE_WAIT_S) -> bool:
        """After the trail has ended: its last spans, then delivery (bounded)."""
        self._stop.set()
        self._thread.join(timeout=self.poll_s + 1.0)
        self.step()
        if self.builder is not None and not self.builder.closed:
            try:
                self.exporter.send(self.builder.agent, self.builder.close())
            except Exception:  # noqa: BLE001
                pass
        return bool(self.exporter.close(wait_s))


def start(path: Path, nid: str) -> Live | None:
    """Follow `path` when traces are wanted (tracecontext.export_wanted);
    None when the SDK is missing (a diagnostic in the trail says so) or the
    exporter cannot be made. Never raises."""
    try:
        from zapcli.telemetry import otlp

        otlp.quiet()
        exporter = otlp.Exporter()
    except Exception as exc:  # noqa: BLE001 - a missing extra or a bad OTEL_* value
        why = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        store.append(path, "diagnostic", {"dimension": "telemetry", "name": "otlp",
                                          "message": f"traces not sent live: {why}"})
        return None
    return Live(path, nid, exporter)
