"""Waking `wait` and `poll` the moment a subagent they wait on ends (#24.15):
the 500 ms interval is the fallback, not the pace.

Imports `zapcli.trail.store`, `zapcli.paths`, `zapcli.ids`,
`zapcli.lifecycle.feed` (the change feed `list --watch` and `top` read
too) when a waiter first sleeps. The feed names the awaited trails that
changed; one wakes the waiter only when the bytes it added hold a record
that can end the wait (a terminal `status`, an approval request for
`poll`), so a chatty subagent costs a read of its new bytes, not a full
observation. The interval stays for what writes nothing: a runner that dies
without a word, a slot that frees for a queued one. Without inotify
(another system, the watch limit reached) a waiter simply sleeps the
interval. A remote runner's end is in no trail here until an observer
collects it: a waiter on one sleeps at most its executor's
`look_every_s` (Ray: 0.25 s) between looks.
"""

from __future__ import annotations

import os
import time

from zapcli.trail import store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from zapcli.lifecycle.feed import Feed

OVERLAP = 64  # bytes read again before the new ones: a marker split across two writes
READ_MAX = 4 << 20  # a trail that grew more than this since the last look: its last bytes


class Waker:
    """Sleeps until an awaited trail gains a record holding one of `wake_on`
    (bytes of its JSON, e.g. `"type":"status"`), or the time is up. Set up before the first look, so nothing written after that look
    is missed; `close()` (or `with`) frees the watch."""

    def __init__(self, ids: Iterable[str], wake_on: tuple[bytes, ...]):
        from zapcli.ids import is_valid
        from zapcli.paths import subagents_dir

        self._ids = {sid for sid in ids if is_valid(sid)}  # the others: not found
        self._wake_on = wake_on
        self._folder = subagents_dir() if self._ids else None
        self._read_to: dict[str, int] = {}
        self._inos: dict[str, int] = {}
        self._feed: Feed | None = None
        self.look_s = _look_every(self._ids)  # None: every awaited end wakes it
        self._watch()

    def nap(self, seconds: float) -> float:
        """`seconds`, or less when an awaited runner is remote (its end
        wakes nobody: it is looked for)."""
        return seconds if self.look_s is None else min(seconds, self.look_s)

    def _watch(self) -> None:
        if self._folder is None:
            return
        from zapcli.lifecycle.feed import Feed

        feed = Feed(self._folder.parent, suffixes=(".jsonl",), scan=False)
        if not feed.watching:  # without inotify: the interval alone
            feed.close()
            return
        self._feed = feed
        for sid in self._ids:
            self._read_to[sid], self._inos[sid] = _size(self._folder / f"{sid}.jsonl")

    def sleep(self, seconds: float) -> None:
        """Return after `seconds`, or as soon as an awaited trail gains a
        waking record (or is removed or replaced); at most `nap(seconds)`."""
        seconds = self.nap(seconds)
        if self._feed is None or not self._feed.watching:
            time.sleep(max(seconds, 0.0))
            return
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            changed = self._feed.changes(left) & self._ids
            if self._feed.overflows:  # events were lost: look now
                self._feed.overflows = 0
                return
            if any(self._wakes(sid) for sid in changed):
                return

    def fileno(self) -> int | None:
        """The feed's inotify descriptor, readable when events wait (for an
        event loop's reader: the asyncio API waits this way); None without
        inotify."""
        return self._feed.fileno() if self._feed is not None else None

    def woken(self) -> bool:
        """Read the events that are there now, without waiting: whether one
        of them wakes the waiter (as `sleep` would have returned)."""
        if self._feed is None:
            return False
        changed = self._feed.ready() & self._ids
        woke = False
        if self._feed.overflows:  # events were lost: look now
            self._feed.overflows = 0
            woke = True
        # every changed trail is read, so each one's offset moves on
        return any([self._wakes(sid) for sid in changed]) or woke

    def _wakes(self, sid: str) -> bool:
        path = self._folder / f"{sid}.jsonl"  # type: ignore[operator]
        size, ino = _size(path)
        if not ino:
            return True  # removed: the observer says so
        start = self._read_to.get(sid, 0)
        if size < start or ino != self._inos.get(sid):  # replaced (a trim): look at it whole
            start = 0
        self._read_to[sid], self._inos[sid] = size, ino
        start = max(start - OVERLAP, 0, size - READ_MAX)
        try:
            fd = store.open_read(path)
        except OSError:
            return True
        try:
            data = os.pread(fd, size - start, start)
        finally:
            os.close(fd)
        return any(marker in data for marker in self._wake_on)

    def close(self) -> None:
        if self._feed is not None:
            self._feed.close()
            self._feed = None

    def __enter__(self) -> Waker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _look_every(ids: Iterable[str]) -> float | None:
    """The shortest `look_every_s` of the awaited subagents' executors (each
    one's spawn line, read once); None when all run on this machine."""
    from zapcli import executors
    from zapcli.trail.reader import spawn_of

    every: set[float] = set()
    for sid in ids:
        try:
            spawn = spawn_of(store.path_for(sid))
        except (OSError, ValueError):
            continue
        if spawn is None or spawn.executor == "local":
            continue
        try:
            seconds = executors.get(spawn.executor).look_every_s
        except (KeyError, executors.Unusable):  # gone or unusable: its observer says so
            continue
        if seconds:
            every.add(seconds)
    return min(every) if every else None


def _size(path: Any) -> tuple[int, int]:
    """(size, inode) of a trail; (0, 0) when it is gone."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return 0, 0
    return st.st_size, st.st_ino
