"""`zapcli output`: the whole captured output, unfolded, optionally followed.

Imports `zapcli.lifecycle`, `zapcli.trail.store`, `zapcli.ops.fold` (the
marker of an output capped past 1 MB). Yields raw byte chunks; the CLI
decides how to show them. A follower that read past the head of an output
that was then capped (its file rewritten to head, marker, tail at its end)
is given what it has not shown, never the file's bytes at its old offset.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

from zapcli.lifecycle.observe import needs_collect, observe
from zapcli.ops.fold import marker_at
from zapcli.results import LINE_SLACK, MARKER_ROOM, PART_BYTES, left_out_line
from zapcli.trail import store
from zapcli.trail.model import Status
from zapcli.trail.reader import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from zapcli.config import Settings

FOLLOW_TICK_S = 0.25


def chunks(sid: str, *, stderr: bool = False, follow: bool = False,
           settings: Callable[[], Settings] | None = None) -> Iterator[bytes]:
    """Yield the captured bytes of `sid`; with `follow`, keep yielding new bytes
    until the subagent is terminal. Raises NotFound for an unknown id.
    `settings` gives the (leniently loaded) settings when a queued subagent
    needs a slot; the CLI's warns about an invalid config once."""
    sid = store.resolve(sid)
    if needs_collect(load(sid)):  # validates the id; a remote runner's output comes home first
        observe(sid)
    path = store.path_for(sid, ".err" if stderr else ".out")
    offset, last = 0, b"\n"
    while True:
        try:
            fd = store.open_read(path)
        except FileNotFoundError:
            fd = -1
        if fd >= 0:
            try:
                while not (follow and _cut_behind(fd, offset)):
                    data = os.pread(fd, 65536, offset)
                    if not data:
                        break
                    offset, last = offset + len(data), data[-1:]
                    yield data
            finally:
                os.close(fd)
        view = observe(sid) if follow else None
        if view is not None and view.status == Status.QUEUED:
            _kick(view.session, settings)  # an observer seeing a queued one uses a free slot (docs/explanation/rules.md#queue)
        if view is None or view.terminal:
            if follow and fd >= 0:
                written = view.stderr_written if stderr else view.stdout_written  # type: ignore[union-attr]
                continue_once = _drain_rest(path, offset, written, last)
                if continue_once:
                    yield continue_once
            return
        time.sleep(FOLLOW_TICK_S)


def _cut_behind(fd: int, offset: int) -> bool:
    """The output was capped past 1 MB when it ended (its file rewritten to
    head, marker, tail) after this follower read beyond the head: what
    follows `offset` in the file now is not what follows in the stream."""
    if offset <= PART_BYTES - LINE_SLACK:
        return False
    at = marker_at(fd)
    return at is not None and offset > at


def _kick(session: str, settings: Callable[[], Settings] | None) -> None:
    from zapcli.backends.sections import OWNERS
    from zapcli.config import load_settings
    from zapcli.lifecycle import queue

    try:
        queue.drain(session, settings() if settings else load_settings(lenient=True, owners=OWNERS))
    except Exception:  # noqa: BLE001 - the queue is best effort for observers
        pass


def _drain_rest(path: Path, offset: int, written: int | None, last: bytes) -> bytes:
    """What a follower that has shown `offset` bytes of the stream has not
    shown yet. When the file was cut to head, marker and tail after it read
    past the head: the rest of the stream when the tail holds it, else a
    marker line saying what it misses, then the tail."""
    try:
        fd = store.open_read(path)
    except OSError:
        return b""
    try:
        size = os.fstat(fd).st_size
        if not _cut_behind(fd, offset) or not written:
            return os.pread(fd, max(size - offset, 0), offset) if size > offset else b""
        marker = marker_at(fd) or 0
        line = os.pread(fd, MARKER_ROOM + 1, marker)
        tail_at = marker + line.find(b"\n") + 1
        tail = os.pread(fd, size - tail_at, tail_at)
        if written - offset <= len(tail):  # the tail holds all it has not shown
            return tail[len(tail) - (written - offset):]
        return (b"" if last == b"\n" else b"\n") + left_out_line(written - offset - len(tail)) + tail
    finally:
        os.close(fd)
