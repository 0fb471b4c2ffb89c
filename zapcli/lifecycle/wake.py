"""Waking `wait` and `poll` the moment a subagent they wait on ends (#24.15):
SPEC §3's 500 ms interval is the fallback, not the pace.

Imports `zapcli.trail.store`, `zapcli.paths`, `zapcli.ids`; `inotify_simple` (Linux: a ctypes wrapper of
the kernel's inotify, kept small and maintained) when a waiter first
sleeps. The subagents folder is watched; a change to one of the awaited
trails wakes the waiter only when the bytes it added hold a record that can
end the wait (a terminal `status`, an approval request for `poll`), so a
chatty subagent costs a read of its new bytes, not a full observation. The
interval stays for what writes nothing: a runner that dies without a word,
a slot that frees for a queued one. Without inotify (another system, the
watch limit reached) a waiter simply sleeps the interval.
"""

from __future__ import annotations

import os
import time

from zapcli.trail import store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

OVERLAP = 64  # bytes read again before the new ones: a marker split across two writes
READ_MAX = 4 << 20  # a trail that grew more than this since the last look: its last bytes


class Waker:
    """Sleeps until an awaited trail gains a record holding one of `wake_on`
    (bytes of its JSON, e.g. `"type":"status"`), or the time is up. Set up before the first look, so nothing written after that look
    is missed; `close()` (or `with`) frees the watch."""

    def __init__(self, ids: Iterable[str], wake_on: tuple[bytes, ...]):
        from zapcli.ids import is_valid
        from zapcli.paths import subagents_dir

        self._names = {f"{sid}.jsonl" for sid in ids if is_valid(sid)}  # the others: not found
        self._wake_on = wake_on
        self._folder = subagents_dir() if self._names else None
        self._read_to: dict[str, int] = {}
        self._ino: Any = None
        self._flags: Any = None
        self._watch()

    def _watch(self) -> None:
        if self._folder is None:
            return
        try:
            from inotify_simple import INotify, flags
        except ImportError:  # not Linux
            return
        try:
            ino = INotify()
        except OSError:  # the per-user instance limit: the interval alone
            return
        try:
            ino.add_watch(str(self._folder), flags.MODIFY | flags.MOVED_TO | flags.CREATE
                          | flags.DELETE | flags.MOVED_FROM)
        except OSError:
            ino.close()
            return
        self._ino, self._flags = ino, flags
        for name in self._names:
            self._read_to[name] = _size(self._folder / name)

    def sleep(self, seconds: float) -> None:
        """Return after `seconds`, or as soon as an awaited trail gains a
        waking record (or is removed or replaced)."""
        if self._ino is None:
            time.sleep(max(seconds, 0.0))
            return
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            for event in self._ino.read(timeout=int(left * 1000) + 1):
                if event.mask & self._flags.Q_OVERFLOW:  # events were lost: look now
                    return
                if event.name in self._names and self._wakes(event.name, event.mask):
                    return

    def fileno(self) -> int | None:
        """The inotify descriptor, readable when events wait (for an event
        loop's reader: the asyncio API waits this way); None without inotify."""
        return self._ino.fileno() if self._ino is not None else None

    def woken(self) -> bool:
        """Read the events that are there now, without waiting: whether one
        of them wakes the waiter (as `sleep` would have returned)."""
        if self._ino is None:
            return False
        woke = False
        for event in self._ino.read(timeout=0):
            if event.mask & self._flags.Q_OVERFLOW or (
                    event.name in self._names and self._wakes(event.name, event.mask)):
                woke = True  # the rest are read too: the descriptor is left drained
        return woke

    def _wakes(self, name: str, mask: int) -> bool:
        if mask & (self._flags.DELETE | self._flags.MOVED_FROM):
            return True  # removed: the observer says so
        path = self._folder / name  # type: ignore[operator]
        size = _size(path)
        start = self._read_to.get(name, 0)
        if size < start or mask & self._flags.MOVED_TO:  # replaced (a trim): look at it whole
            start = 0
        self._read_to[name] = size
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
        if self._ino is not None:
            self._ino.close()
            self._ino = None

    def __enter__(self) -> Waker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _size(path: Any) -> int:
    try:
        return os.stat(path, follow_symlinks=False).st_size
    except OSError:
        return 0
