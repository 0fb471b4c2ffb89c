"""The latest runner records of one trail, read again and again cheaply:
the runner's claim asks every 20 ms until its launcher's `process` record
has landed.

Imports `zapcli.trail.store`, `zapcli.trail.reader`, `zapcli.trail.model`.
Lock-free like every reader: appends land whole under the trail's lock, and
a torn last line is left for the next read. Where the `spawn` record (the
first line: a task of up to 1 MB, a definition) ends is found once per file
— a trail rewritten by retention is a new file and is looked at again — and
only the bytes after it are read and parsed.
"""

from __future__ import annotations

import os

from zapcli.plain import plain
from zapcli.trail import reader, store
from zapcli.trail.model import FinalStatus, ProcessRecord, StartRecord

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path
    from typing import Any


@plain
class Latest:
    """What a trail says of its runner: as `reader.Summary` has them."""

    process: ProcessRecord | None = None  # the latest `process` record
    start: StartRecord | None = None  # the latest `start` record
    final: FinalStatus | None = None  # the first terminal `status` record


def latest(records: Iterable[dict[str, Any]]) -> Latest:
    out = Latest()
    for rec in records:
        rtype = rec.get("type")
        if rtype == "process":
            out.process = ProcessRecord.from_record(rec)
        elif rtype == "start":
            out.start = StartRecord.from_record(rec)
        elif rtype == "requeued" and out.final is None:  # back in the queue (C43)
            out.process = out.start = None
        elif rtype == "status" and out.final is None:
            out.final = FinalStatus.from_record(rec)
    return out


class Watch:
    """`read()` the latest runner records of the trail at `path`, as often as
    needed, parsing only what follows its `spawn` record."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: tuple[int, int] | None = None  # (device, inode) the offset is for
        self._after_spawn = 0  # where the first line ends; 0: not found yet

    def read(self) -> Latest:
        """Raises OSError as `store.open_read` (the trail is gone, or is no
        regular file)."""
        fd = store.open_read(self.path)
        try:
            st = os.fstat(fd)
            if self._file != (st.st_dev, st.st_ino) or not self._after_spawn or (
                    st.st_size < self._after_spawn):
                self._file = (st.st_dev, st.st_ino)
                self._after_spawn = reader.first_line_end(fd, st.st_size)
            rest = st.st_size - self._after_spawn
            data = os.pread(fd, rest, self._after_spawn) if rest <= store.READ_MAX_BYTES else None
        finally:
            os.close(fd)
        if data is None:  # a giant: read as every reader reads one (its head and tail)
            return latest(reader.read(self.path).records)
        return latest(reader.parse(data).records)

