"""Folding captured output for poll (docs/explanation/rules.md#commands poll): first 2 KB, a line saying
how much was folded, last 2 KB — cut on UTF-8 character boundaries; and
finding the marker line of an output capped past 1 MB (`marker_at`).

Imports `zapcli.trail.store`, `zapcli.results` (the `Folded` it returns).
Reads only the head and tail of the file, so a subagent's 1 MB of output
never sits in memory.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.results import LINE_SLACK, MARKER_PREFIX, MARKER_ROOM, PART_BYTES, Folded
from zapcli.trail import store

FOLD_BYTES = 2048


def _cut_end(raw: bytes) -> bytes:
    """Drop an incomplete UTF-8 sequence at the end of `raw`."""
    for back in range(1, min(4, len(raw)) + 1):
        byte = raw[-back]
        if byte < 0x80:
            return raw
        if byte >= 0xC0:  # a lead byte: is its sequence complete?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return raw if back >= need else raw[:-back]
    return raw


def _cut_start(raw: bytes) -> bytes:
    """Drop continuation bytes at the start of `raw` (a character cut in half)."""
    i = 0
    while i < min(3, len(raw)) and 0x80 <= raw[i] < 0xC0:
        i += 1
    return raw[i:]


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def fold_file(path: Path, written: int | None = None, limit: int = FOLD_BYTES) -> Folded:
    """Fold the captured file at `path` (missing file = empty)."""
    try:
        fd = store.open_read(path)
    except FileNotFoundError:
        return Folded("", "", 0, 0, written or 0, missing=bool(written))
    except OSError as exc:  # a FIFO, socket or symlink in its place: never read
        return Folded("", "", 0, 0, written or 0, missing=True, unreadable=exc.strerror or str(exc))
    try:
        size = os.fstat(fd).st_size
        written = max(written or 0, size)
        ends = written > size and marker_at(fd) is not None
        body = _cut_end(os.pread(fd, min(size, 4), max(size - 4, 0))) if size else b""
        end = size - (min(size, 4) - len(body))  # the kept end, minus a torn character
        if end <= 2 * limit:
            return Folded(decode(os.pread(fd, end, 0)), "", 0, size, written, ends_kept=ends)
        head = _cut_end(os.pread(fd, limit, 0))
        tail = _cut_start(os.pread(fd, limit, end - limit))
        return Folded(decode(head), decode(tail), end - len(head) - len(tail), size, written,
                      ends_kept=ends)
    finally:
        os.close(fd)


def marker_at(fd: int) -> int | None:
    """Where the marker line between a capped output's head and tail starts
    (`zapcli.supervisor.capture`), or None: the output was kept whole, or as
    its first 1 MB only (captured before the tail was kept)."""
    start = max(PART_BYTES - LINE_SLACK - 1, 0)
    window = os.pread(fd, LINE_SLACK + MARKER_ROOM + 2, start)
    at = window.find(b"\n" + MARKER_PREFIX)
    return None if at < 0 else start + at + 1


def kept_ends(path: Path) -> bool:
    """The captured file at `path` holds a head, a marker line and a tail."""
    try:
        fd = store.open_read(path)
    except OSError:
        return False
    try:
        return marker_at(fd) is not None
    finally:
        os.close(fd)


def tail_text(path: Path, limit: int = 1024) -> str:
    """The last `limit` bytes of a captured file as text, starting on a
    character and, when it can, a line boundary ("" when missing or empty)."""
    try:
        fd = store.open_read(path)
    except OSError:
        return ""
    try:
        size = os.fstat(fd).st_size
        raw = _cut_start(os.pread(fd, min(size, limit), max(size - limit, 0)))
    finally:
        os.close(fd)
    if size > limit and b"\n" in raw[:-1]:
        raw = raw[raw.index(b"\n") + 1:]
    return decode(raw)
