"""The one place `top` reads subagents' files: the fleet's rows, what
changed, a row's output tail and last trail records — looked at, never
written.

Imports `zapcli.lifecycle` (the pure look and its `Looker`, the change
`Feed`, the session), `zapcli.trail`, `zapcli.tui.fleet`. Looking writes
nothing: a dead runner without a result shows as `lost` here and is
recorded by the next acting command (`poll`, `list`, `wait`, `kill`),
never by `top`'s refresh. The feed (inotify on the subagents folder, the
interval as fallback) names what changed, so a refresh re-reads only those
trails; a live row that changed nothing is looked at again from what was
read before (its elapsed time, whether its runner still lives, a stall).

The one exception is a runner on another machine (Ray): its files reach
this machine only when someone brings them home, which is the acting
observer's work (`zapcli.lifecycle.observe`). `collect()` asks it for the
rows whose look says files are waiting out there (`Look.remote`), at most
every COLLECT_S — without it a Ray subagent's approval request would never
reach the screen.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from zapcli.config import Settings
from zapcli.errors import NotFound
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.feed import Feed
from zapcli.lifecycle.look import Looker
from zapcli.trail import reader, records, store
from zapcli.trail.reader import Summary
from zapcli.tui.fleet import Row

TAIL_BYTES = 16 << 10  # what is read of a trail's end for its last records
COLLECT_S = 2.0  # a remote runner's files are brought home this often while it is shown


class Source:
    """The fleet of this session (or every session's): `ids()`, `look(sid)`,
    `changes(timeout)`, `rescope(all_sessions)`; `close()` frees the feed.
    One thread uses it (the screen's feed thread); the peek's reads
    (`output_tail`, `last_records`) touch no shared state."""

    def __init__(self, settings: Settings, *, session: str | None = None,
                 all_sessions: bool = False, interval: float = 1.0):
        self.settings = settings
        self.session = session or sessions.current()
        self.all_sessions = all_sessions
        self.interval = interval
        self.looker = Looker(stall_s=settings.stall_s)
        self.feed = self._feed()
        self._last: dict[str, tuple[tuple[int, int], str, float | None]] = {}
        self._remote: dict[str, float] = {}  # remote id -> when its files were last brought home

    def _feed(self) -> Feed:
        return Feed(session=None if self.all_sessions else self.session, interval=self.interval)

    def rescope(self, all_sessions: bool) -> None:
        """Show every session's subagents, or this session's."""
        self.all_sessions = all_sessions
        self.feed.close()
        self.feed = self._feed()

    # --- which subagents ----------------------------------------------------
    def ids(self) -> list[str]:
        """Every subagent shown, on disk now."""
        return sorted(self.feed.every())

    def shows(self, row: Row) -> bool:
        return self.all_sessions or row.view.session == self.session

    # --- one subagent -------------------------------------------------------
    def look(self, sid: str, *, changed: bool = True) -> Row | None:
        """The row of `sid` as its files say now (`changed` False: the feed
        said nothing of it changed); None when it is gone or damaged."""
        try:
            seen = self.looker.look(sid, changed=changed)
        except NotFound:
            self.looker.forget(sid)
            self._last.pop(sid, None)
            self._remote.pop(sid, None)
            return None
        if seen.remote and not seen.view.terminal:
            self._remote.setdefault(sid, 0.0)
        else:
            self._remote.pop(sid, None)
        last, when = self._last_of(sid, changed)
        if not seen.view.terminal:  # a command's output is activity too (no record says it)
            wrote = _written_at(sid)
            if wrote is not None and (when is None or wrote > when):
                last, when = "output", wrote
        return Row(seen.view, seen.executor, last, when, _created(seen.summary))

    def _last_of(self, sid: str, changed: bool) -> tuple[str, float | None]:
        had = self._last.get(sid)
        if had is not None and not changed:
            return had[1], had[2]
        try:
            st = os.stat(store.path_for(sid), follow_symlinks=False)
        except OSError:
            return "", None
        stamp = (st.st_size, st.st_mtime_ns)
        if had is not None and had[0] == stamp:
            return had[1], had[2]
        last, when = _last(self.last_records(sid, 32))
        self._last[sid] = (stamp, last, when)
        return last, when

    def collect(self) -> set[str]:
        """Bring home what remote runners wrote (through the acting observer,
        see the module docstring), each at most every COLLECT_S; the ids asked."""
        now = time.monotonic()
        due = [sid for sid, at in self._remote.items() if now - at >= COLLECT_S]
        if not due:
            return set()
        from zapcli.lifecycle.observe import observe

        for sid in due:
            self._remote[sid] = now
            try:
                observe(sid, stall_s=self.settings.stall_s, kill_grace_s=self.settings.kill_grace_s)
            except NotFound:
                self._remote.pop(sid, None)
        return set(due)

    # --- what changed -------------------------------------------------------
    def changes(self, timeout: float) -> set[str]:
        """The ids whose files changed (written, made, removed) within
        `timeout` seconds; returns as soon as one did."""
        return self.feed.changes(timeout)

    def close(self) -> None:
        self.feed.close()

    # --- the peek -----------------------------------------------------------
    def output_tail(self, sid: str, max_bytes: int = 8192) -> tuple[str, int]:
        """The end of its captured stdout (at most `max_bytes`), and the
        whole output's size."""
        return _tail(store.path_for(sid, ".out"), max_bytes)

    def last_records(self, sid: str, n: int = 8) -> list[dict[str, Any]]:
        """Its last `n` trail records (from the file's end)."""
        data, size = _tail_bytes(store.path_for(sid), TAIL_BYTES)
        if not data:
            return []
        start = data.find(b"\n") + 1 if size > len(data) else 0
        return reader.parse(data[start:]).records[-n:]


def _created(s: Summary) -> float:
    try:
        return records.parse_iso(s.spawn.created)
    except ValueError:
        return 0.0


# what the LAST column calls a record: its kind in a word or two
LAST_WORDS = {"text": "text", "thinking": "thinking", "tool_result": "result", "usage": "model call",
              "approval_decision": "decided", "steer": "message", "report": "report",
              "process": "started", "start": "started", "diagnostic": "diagnostic",
              "rate_limit": "rate limit", "held": "held", "spawn": "spawned"}


def _last(recs: list[dict[str, Any]]) -> tuple[str, float | None]:
    """The last record that says what it did, in a word or two (`bash`,
    `asks bash`, `model call`, `completed`), and when."""
    for rec in reversed(recs):
        kind = rec.get("type")
        if kind == "tool_call":
            text = str(rec.get("name") or "tool")
        elif kind == "approval_request":
            text = f"asks {rec.get('tool') or ''}".rstrip()
        elif kind == "status":
            text = str(rec.get("status"))
        elif kind in LAST_WORDS:
            text = LAST_WORDS[str(kind)]
        else:
            continue
        try:
            return text, records.parse_iso(str(rec.get("ts")))
        except ValueError:
            return text, None
    return "", None


def _written_at(sid: str) -> float | None:
    """When the subagent last wrote to its captured stdout (None: never)."""
    try:
        st = os.stat(store.path_for(sid, ".out"), follow_symlinks=False)
    except OSError:
        return None
    return st.st_mtime if st.st_size else None


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
