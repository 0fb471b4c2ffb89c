"""The one place `top` reads subagents' files: the fleet's rows, what
changed, a row's output tail and last trail records — looked at, never
written.

Imports `zapcli.lifecycle` (the session markers, the pure status
derivation), `zapcli.trail`, `zapcli.executors` (is a runner alive),
`zapcli.paths`, `zapcli.tui.fleet`; `inotify_simple` for the change feed.
Looking writes nothing: a dead runner without a result shows as `lost`
here and is recorded by the acting observer (`poll`, `list`, `wait`, the
next `kill`), never by `top`, which only displays. The feed is inotify on
the subagents folder (the interval as fallback when inotify cannot be had),
so a refresh re-reads only the trails that changed; a row that changed
nothing is re-derived from what was read before (its elapsed time, whether
its runner still lives, whether it stalled).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from zapcli import ids as idmod
from zapcli.config import Settings
from zapcli.errors import NotFound
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.status import Facts, View, derive
from zapcli.paths import subagents_dir
from zapcli.trail import reader, records, store
from zapcli.trail.reader import Summary
from zapcli.tui.fleet import Row

SUFFIXES = (".jsonl", ".out", ".err")
TAIL_BYTES = 16 << 10  # what the peek reads of a trail's end for its last records
LAST_KINDS = {"text", "thinking", "tool_call", "tool_result", "usage", "approval_request",
              "approval_decision", "steer", "report", "status", "process", "start",
              "diagnostic", "rate_limit", "held", "spawn"}


class _Known:
    """What was read of one trail, and the file stats it was read at."""

    __slots__ = ("stamp", "summary", "last", "last_epoch", "created")

    def __init__(self, stamp: tuple[int, int], summary: Summary, last: str,
                 last_epoch: float | None, created: float):
        self.stamp, self.summary, self.last = stamp, summary, last
        self.last_epoch, self.created = last_epoch, created


class Source:
    """The fleet of this session (or every session's): `ids()`, `look(sid)`,
    `changes(timeout)`; `close()` frees the feed."""

    def __init__(self, settings: Settings, *, session: str | None = None,
                 all_sessions: bool = False, interval: float = 1.0):
        self.settings = settings
        self.session = session or sessions.current()
        self.all_sessions = all_sessions
        self.interval = interval
        self.folder = subagents_dir()
        self._known: dict[str, _Known] = {}
        self._feed = _Feed(self.folder)

    # --- which subagents ----------------------------------------------------
    def ids(self) -> list[str]:
        """Every subagent shown: this session's (its markers, then any trail
        of it found on disk), or every trail's."""
        try:
            names = os.listdir(self.folder)
        except OSError:
            return []
        on_disk = [n[:-6] for n in names if n.endswith(".jsonl") and idmod.is_valid(n[:-6])]
        if self.all_sessions:
            return on_disk
        mine = set(sessions.members(self.session))
        return [sid for sid in on_disk if sid in mine or self._of_session(sid)]

    def _of_session(self, sid: str) -> bool:
        known = self._known.get(sid)
        return known is not None and known.summary.spawn.session == self.session

    def shows(self, row: Row) -> bool:
        return self.all_sessions or row.view.session == self.session

    # --- one subagent -------------------------------------------------------
    def look(self, sid: str) -> Row | None:
        """The row of `sid` as its files say now; None when it is gone or has
        no spawn record (damaged)."""
        path = store.path_for(sid)
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            self._known.pop(sid, None)
            return None
        stamp = (st.st_size, st.st_mtime_ns)
        known = self._known.get(sid)
        if known is None or known.stamp != stamp:
            known = self._read(sid, path, stamp)
            if known is None:
                return None
        view = self._view(sid, known)
        return Row(view, known.summary.spawn.executor, known.last, known.last_epoch, known.created)

    def _read(self, sid: str, path: Path, stamp: tuple[int, int]) -> _Known | None:
        try:
            trail = reader.read(path)
        except OSError:
            self._known.pop(sid, None)
            return None
        summary = reader.summarize(trail)
        if summary is None:
            self._known.pop(sid, None)
            return None
        last, last_epoch = _last(trail.records)
        try:
            created = records.parse_iso(summary.spawn.created)
        except ValueError:
            created = 0.0
        known = _Known(stamp, summary, last, last_epoch, created)
        self._known[sid] = known
        return known

    def _view(self, sid: str, known: _Known) -> View:
        s = known.summary
        stall_s = self.settings.stall_s
        now = time.monotonic()
        age = _activity_age(sid) if stall_s > 0 and s.final is None else None
        alive: bool | None = None
        why = None
        proc = s.runner
        if s.final is None and proc is not None and s.spawn.executor == "local":
            from zapcli import executors

            live = executors.get("local").alive(proc.raw)
            alive, why = live.alive, live.reason
        view, finding = derive(sid, s, Facts(alive, now, _boot() if alive is False else 0.0,
                                             age, why), stall_s=stall_s)
        if finding is not None:  # shown as it is; the acting observer records it
            view.status, view.reason, view.stalled_s = finding.status, finding.reason, None
        return view

    # --- what changed -------------------------------------------------------
    def changes(self, timeout: float) -> set[str]:
        """The ids whose files changed (written, made, removed) within
        `timeout` seconds; returns as soon as one did."""
        return self._feed.changes(timeout)

    def close(self) -> None:
        self._feed.close()

    # --- the peek -----------------------------------------------------------
    def output_tail(self, sid: str, max_bytes: int = 8192) -> tuple[str, int]:
        """The end of its captured stdout (at most `max_bytes`), and the
        whole output's size."""
        return _tail(store.path_for(sid, ".out"), max_bytes)

    def last_records(self, sid: str, n: int = 8) -> list[dict[str, Any]]:
        """Its last `n` trail records (from the file's end)."""
        data, _size = _tail_bytes(store.path_for(sid), TAIL_BYTES)
        if not data:
            return []
        start = data.find(b"\n") + 1 if _size > len(data) else 0
        return reader.parse(data[start:]).records[-n:]

    def summary(self, sid: str) -> Summary | None:
        known = self._known.get(sid)
        return known.summary if known is not None else None


def _last(recs: list[dict[str, Any]]) -> tuple[str, float | None]:
    """The last record that says what it did: its kind (and tool), and when."""
    for rec in reversed(recs):
        kind = rec.get("type")
        if kind not in LAST_KINDS:
            continue
        text = str(kind)
        if kind in ("tool_call", "approval_request"):
            text += f" {rec.get('name') or rec.get('tool') or ''}".rstrip()
        elif kind == "status":
            text = str(rec.get("status"))
        try:
            return text, records.parse_iso(str(rec.get("ts")))
        except ValueError:
            return text, None
    return "", None


def _activity_age(sid: str) -> float | None:
    newest = 0.0
    for suffix in SUFFIXES:
        try:
            newest = max(newest, os.stat(store.path_for(sid, suffix), follow_symlinks=False).st_mtime)
        except OSError:
            continue
    return time.time() - newest if newest else None


_BOOT: list[float] = []


def _boot() -> float:
    if not _BOOT:
        from zapcli.supervisor.liveness import boot_time

        _BOOT.append(boot_time())
    return _BOOT[0]


def _tail_bytes(path: Path, max_bytes: int) -> tuple[bytes, int]:
    try:
        fd = store.open_read(path)
    except (OSError, NotFound):
        return b"", 0
    try:
        size = os.fstat(fd).st_size
        start = max(size - max_bytes, 0)
        return os.pread(fd, size - start, start), size
    finally:
        os.close(fd)


def _tail(path: Path, max_bytes: int) -> tuple[str, int]:
    data, size = _tail_bytes(path, max_bytes)
    text = data.decode("utf-8", "replace")
    if size > len(data):  # begin at a whole line
        cut = text.find("\n")
        text = text[cut + 1:] if cut >= 0 else text
    return text, size


class _Feed:
    """Which subagents' files changed: inotify on the subagents folder, or —
    without inotify, or while the folder does not exist yet — the interval,
    comparing each file's size and time."""

    MASK_NAMES = ("MODIFY", "CLOSE_WRITE", "CREATE", "DELETE", "MOVED_TO", "MOVED_FROM", "ATTRIB")

    def __init__(self, folder: Path):
        self.folder = folder
        self._ino: Any = None
        self._overflow = 0
        self._stats: dict[str, tuple[int, int]] | None = None
        self._watch()

    def _watch(self) -> None:
        try:
            from inotify_simple import INotify, flags
        except ImportError:
            return
        if not self.folder.is_dir():
            return
        try:
            ino = INotify()
            mask = 0
            for name in self.MASK_NAMES:
                mask |= getattr(flags, name)
            ino.add_watch(str(self.folder), mask)
        except OSError:
            return
        self._ino, self._overflow = ino, flags.Q_OVERFLOW

    def changes(self, timeout: float) -> set[str]:
        if self._ino is None:
            self._watch()
        if self._ino is None:
            time.sleep(max(timeout, 0.0))
            return self._scan()
        out: set[str] = set()
        for event in self._ino.read(timeout=max(int(timeout * 1000), 0)):
            if event.mask & self._overflow:
                return self._scan(everything=True)
            sid = _sid_of(event.name)
            if sid:
                out.add(sid)
        return out

    def _scan(self, everything: bool = False) -> set[str]:
        stats: dict[str, tuple[int, int]] = {}
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            entries = []
        for entry in entries:
            if _sid_of(entry.name) is None:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            stats[entry.name] = (st.st_size, st.st_mtime_ns)
        before = self._stats or {}
        self._stats = stats
        names = set(stats) | set(before) if everything else {
            n for n in set(stats) | set(before) if stats.get(n) != before.get(n)}
        return {sid for n in names if (sid := _sid_of(n))}

    def close(self) -> None:
        if self._ino is not None:
            self._ino.close()
            self._ino = None


def _sid_of(name: str) -> str | None:
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            sid = name[: -len(suffix)]
            return sid if idmod.is_valid(sid) else None
    return None
