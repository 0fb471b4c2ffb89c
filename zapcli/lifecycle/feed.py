"""The change feed: which subagents' files changed, for views that keep
looking (`zapcli top`, `list --watch`, `wait`) — so a view of a thousand
subagents re-reads only what changed.

Imports `zapcli.paths`, `zapcli.ids`, `zapcli.lifecycle.session` (a
session's member markers); `inotify_simple` (Linux: a ctypes wrapper of the
kernel's inotify) when it can be used. One inotify watch on
`<state>/subagents` reports every trail, output and error file that grows,
appears, is replaced (a trim) or goes; `changes(timeout)` blocks until one
did and answers with their ids. Without inotify (another system, the
per-user limit reached, the folder not made yet) it stats the files every
`interval` and answers with those whose inode, size or time moved. When the
kernel's queue overflowed, events were lost: every id is answered once.

The feed only says what changed; it reads no trail and writes nothing. What
does not change any file — a runner that died without a word, a deadline
passing, a stall growing — is the caller's to look at on its own clock:
`changes` returns empty after `timeout`, and the caller looks again at what
is live (`zapcli.lifecycle.look.Looker` re-reads nothing then).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from zapcli import ids as idmod

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SUFFIXES = (".jsonl", ".out", ".err")  # a subagent's files that change as it works
SETTLE_S = 0.02  # after the first change, what else lands this soon comes in the same answer


def id_of(name: str, suffixes: tuple[str, ...] = SUFFIXES) -> str | None:
    """The subagent id a file name in the subagents folder belongs to (one of
    `suffixes`), else None."""
    for suffix in suffixes:
        if name.endswith(suffix):
            sid = name[: -len(suffix)]
            return sid if idmod.is_valid(sid) else None
    return None


class Feed:
    """Changes to subagents' files under `state_home` (default: the state
    folder), of one `session` (its members' markers) or of all. Make it
    before the first look, so nothing written after that look is missed;
    `close()` (or `with`) frees the watch. `inotify` False: the scans
    alone; `scan` False: without inotify, `changes` only sleeps (for a
    caller that looks on the interval anyway)."""

    def __init__(self, state_home: Path | None = None, *, session: str | None = None,
                 interval: float = 1.0, suffixes: tuple[str, ...] = SUFFIXES,
                 inotify: bool = True, scan: bool = True):
        from zapcli.paths import state_dir

        self.home = Path(state_home) if state_home is not None else state_dir()
        self.folder = self.home / "subagents"
        self.session = session
        self.interval = interval
        self.suffixes = suffixes
        self.overflows = 0  # how often the kernel's queue overflowed (every id was answered)
        self._use_inotify = inotify
        self._use_scan = scan
        self._ino: Any = None
        self._flags: Any = None
        self._members: set[str] | None = None
        self._foreign: set[str] = set()  # ids of other sessions seen moving
        self._sigs: dict[str, tuple[int, int, int]] = {}
        self._refresh_members()
        self._watch()
        if self._ino is None and scan:
            self._sigs = self._scan()

    @property
    def watching(self) -> bool:
        """True while inotify reports changes (else the interval's scans do)."""
        return self._ino is not None

    def _refresh_members(self) -> None:
        if self.session is None:
            return
        from zapcli.lifecycle.session import key

        try:
            names = os.listdir(self.home / "sessions" / key(self.session) / "all")
        except OSError:
            names = []
        self._members = {n.partition("_")[2] for n in names if "_" in n}

    def _mine(self, sid: str) -> bool:
        if self._members is None or sid in self._members:
            return True
        if sid in self._foreign:
            return False
        self._refresh_members()  # a new spawn writes its marker before its trail
        if sid in self._members:  # type: ignore[operator]
            return True
        self._foreign.add(sid)  # not a member when its files first moved: never one
        return False

    def _watch(self) -> None:
        if not self._use_inotify:
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
            ino.add_watch(str(self.folder), flags.MODIFY | flags.CREATE | flags.DELETE
                          | flags.MOVED_TO | flags.MOVED_FROM)
        except OSError:  # not made yet, or the watch limit: scans until it can
            ino.close()
            return
        self._ino, self._flags = ino, flags

    def changes(self, timeout: float | None = None) -> set[str]:
        """Block up to `timeout` seconds (default: the interval) until some
        watched subagent's files changed; the ids that changed since the last
        call — empty when nothing did."""
        wait_s = self.interval if timeout is None else max(timeout, 0.0)
        if self._ino is None:
            return self._scan_changes(wait_s)
        deadline = time.monotonic() + wait_s
        found: set[str] = set()
        while True:
            left = 0.0 if found else deadline - time.monotonic()
            got = self._read(max(left, 0.0))
            if got is None:  # the watch went (its folder removed): scans from now on
                return found | self._scan_changes(max(deadline - time.monotonic(), 0.0))
            found |= got
            if found:
                more = self._read(SETTLE_S)
                return found | (more or set())
            if time.monotonic() >= deadline:
                return found

    def fileno(self) -> int | None:
        """The inotify descriptor, readable when events wait (for an event
        loop's reader); None while the feed scans instead."""
        return self._ino.fileno() if self._ino is not None else None

    def ready(self) -> set[str]:
        """The ids in the events already queued, without waiting (the
        descriptor is left drained); empty while the feed scans instead."""
        if self._ino is None:
            return set()
        got = self._read(0.0)
        return got if got is not None else set()

    def _read(self, timeout_s: float) -> set[str] | None:
        """The ids in the events that arrive within `timeout_s`; None when the
        watch is gone."""
        flags = self._flags
        found: set[str] = set()
        for event in self._ino.read(timeout=int(timeout_s * 1000)):
            if event.mask & flags.Q_OVERFLOW:
                self.overflows += 1
                found |= self.every()
                continue
            if event.mask & (flags.IGNORED | flags.DELETE_SELF):
                self.close()
                self._sigs = self._scan()
                return None
            sid = id_of(event.name, self.suffixes)
            if sid is not None and self._mine(sid):
                found.add(sid)
        return found

    def every(self) -> set[str]:
        """Every id of the feed's subagents now on disk."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return set()
        found = {sid for n in names if (sid := id_of(n, self.suffixes)) is not None}
        if self.session is not None:
            self._refresh_members()
            found &= self._members or set()
        return found

    def _scan(self) -> dict[str, tuple[int, int, int]]:
        """(inode, size, time) of each watched file: the fallback's memory."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return {}
        if self.session is not None:
            self._refresh_members()
        out = {}
        for name in names:
            sid = id_of(name, self.suffixes)
            if sid is None or (self._members is not None and sid not in self._members):
                continue
            try:
                st = os.stat(self.folder / name, follow_symlinks=False)
            except OSError:
                continue
            out[name] = (st.st_ino, st.st_size, st.st_mtime_ns)
        return out

    def _scan_changes(self, wait_s: float) -> set[str]:
        """The fallback: sleep, then compare the files with the last scan (and
        take up inotify again once the folder exists)."""
        if wait_s > 0:
            time.sleep(wait_s)
        if not self._use_scan:
            return set()
        now = self._scan()
        before, self._sigs = self._sigs, now
        changed = {n for n in now.keys() | before.keys() if now.get(n) != before.get(n)}
        if self._ino is None and self._use_inotify and self.folder.is_dir():
            self._watch()
            if self._ino is not None:
                self._sigs = {}
        return {sid for n in changed if (sid := id_of(n, self.suffixes)) is not None}

    def close(self) -> None:
        if self._ino is not None:
            self._ino.close()
            self._ino = None

    def __enter__(self) -> Feed:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

