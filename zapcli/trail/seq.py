"""The highest `seq` a trail holds, read from its tail: where an appender
continues the count. Imports `zapcli.trail.jsonl`, `zapcli.trail.records`."""

from __future__ import annotations

import os

from zapcli.trail import jsonl, records

SEQ_WINDOW = 2 * records.MAX_RECORD_BYTES


def last_seq(fd: int) -> int:
    """The highest `seq` among the trail's last records (its whole content when
    the tail holds no complete record, e.g. only a large `spawn` record)."""
    size = os.fstat(fd).st_size
    start = max(size - SEQ_WINDOW, 0)
    best = _max_seq(os.pread(fd, size - start, start), skip_first=start > 0)
    if best is None and start > 0:
        best = _max_seq(os.pread(fd, size, 0), skip_first=False)
    return best or 0


def _max_seq(data: bytes, *, skip_first: bool) -> int | None:
    lines = data.split(b"\n")
    loads = jsonl.loader(len(data))
    best = None
    for line in lines[1:] if skip_first else lines:
        if not line:
            continue
        try:
            seq = loads(line).get("seq")
        except (ValueError, AttributeError):
            continue
        if isinstance(seq, int) and not isinstance(seq, bool) and (best is None or seq > best):
            best = seq
    return best
