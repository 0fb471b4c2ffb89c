"""Trail trimming (SPEC §6.3): a trail over 5 MB becomes its last 1 MB.

Imports `zapcli.trail.records`, `zapcli.trail.store`, `zapcli.trail.reader`.
The head keeps the `spawn` and `process` records and a `trimmed` record; the
tail is cut at a line boundary; the first terminal status and the final report
are kept even if they fell before the cut. The rewrite is atomic (temp file in
the same folder + os.replace).
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.paths import FILE_MODE
from zapcli.trail import records, store
from zapcli.trail.model import is_terminal

TRIM_OVER_BYTES = 5 * 1024 * 1024
KEEP_BYTES = 1024 * 1024


def trim(path: Path, *, over: int = TRIM_OVER_BYTES, keep: int = KEEP_BYTES) -> int:
    """Trim `path` if larger than `over` bytes. Returns bytes dropped (0 = untouched)."""
    if os.stat(path, follow_symlinks=False).st_size <= over:
        return 0
    data, _skipped = store.read_bounded(path)  # a damaged giant: its head and tail
    import orjson  # a trail over `over` bytes: worth its import

    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    head: list[bytes] = []
    keepers: dict[str, bytes] = {}
    for line in lines:
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(rec, dict):
            continue
        rtype = rec.get("type")
        if rtype in ("spawn", "process"):
            head.append(line)
        elif rtype == "status" and is_terminal(rec.get("status")):
            keepers.setdefault("status", line)
        elif rtype == "report":
            keepers["report"] = line
    head_set = set(head)
    budget = keep - sum(len(h) + 1 for h in head) - 200
    tail: list[bytes] = []
    size = 0
    for line in reversed(lines):
        if size + len(line) + 1 > budget:
            break
        tail.append(line)
        size += len(line) + 1
    tail.reverse()
    tail = [t for t in tail if t not in head_set]
    extra = [v for v in (keepers.get("report"), keepers.get("status")) if v and v not in tail]
    kept = len(b"\n".join(head + extra + tail))
    dropped = max(len(data) - kept, 0)
    first_seq = 0
    try:
        first_seq = orjson.loads(tail[0]).get("seq", 0) if tail else 0
    except orjson.JSONDecodeError:
        pass
    # The marker stands where the dropped records were: after the kept older
    # ones, before the tail, with the seq of the last dropped record, so seqs
    # stay unique and in order.
    marker = records.encode(records.make("trimmed", max(first_seq - 1, 0),
                                         {"dropped_bytes": dropped}), [])
    body = (b"".join(h + b"\n" for h in head + extra) + marker
            + b"".join(x + b"\n" for x in tail))
    tmp = path.with_name(f".{path.name}.trim-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        store.write_all(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return dropped
