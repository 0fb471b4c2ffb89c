"""`zapcli list`: this session's subagents (or every session's), newest first.

Imports `zapcli.lifecycle`.
`--all` scans the subagents folder; a session's list reads only its members.
A trail without its spawn record is listed apart as damaged, with why.
Creation order comes from the session markers (their names start with the
creation time), so only the `limit` newest trails are read: a list over
1,000 subagents observes 20 of them. `--status` has to observe every one
(given more than once: any of those statuses).
`Watch` is `list --watch`: the same list on a change feed, re-reading only
the trails that changed.
"""

from __future__ import annotations

import os
import time

from zapcli import ids as idmod
from zapcli.config import Settings
from zapcli.errors import Damaged, NotFound, StateError, UsageError, param
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.observe import act, observe
from zapcli.lifecycle.status import View
from zapcli.paths import state_dir, subagents_dir
from zapcli.plain import plain
from zapcli.trail.model import ALL as STATUSES
from zapcli.trail.model import Status

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from zapcli.trail.model import SpawnRecord

DEFAULT_LIMIT = 20
KICK_S = 5.0  # `list --watch` starts what free slots allow at least this often


def _all_ids() -> list[str]:
    try:
        names = os.listdir(subagents_dir())
    except FileNotFoundError:
        return []
    return idmod.valid_among([n[:-6] for n in names if n.endswith(".jsonl")])


@plain
class ListResult:
    """This session's (or every session's) views, newest first, at most
    `limit` (0: all). `more`: how many further ones were not shown.
    `elsewhere`: when this session shows nothing, how many subagents other
    sessions have (None when not counted)."""

    session: str
    views: list[View]
    all_sessions: bool = False
    in_other_sessions: int | None = None
    active_elsewhere: int | None = None  # of those, how many are not finished
    more: int = 0
    limit: int = DEFAULT_LIMIT
    long: bool = False
    damaged: dict[str, str] | None = None  # id -> why it cannot be read (no spawn record)
    waiting: dict[str, str] | None = None  # a queued one's id -> what it waits for
    status: tuple[str, ...] = ()  # `--status`: only the ones of these statuses were counted
    named: bool = False  # the session was named (ZAPCLI_SESSION), not derived from a terminal


def _newest_first(all_sessions: bool, session: str) -> list[str]:
    """Ids newest first: the session's markers are in creation order; for
    every session, the markers of all of them, then any trail without one
    (made by hand) by its id's date."""
    if not all_sessions:
        return list(reversed(sessions.members(session)))
    on_disk = set(_all_ids())
    stamped = sorted(sessions.all_members(), reverse=True)
    order = [sid for _stamp, sid in stamped if sid in on_disk]
    known = set(order)
    order += sorted((sid for sid in on_disk if sid not in known), reverse=True)
    return list(dict.fromkeys(order))


def list_subagents(settings: Settings, *, all_sessions: bool = False,
                   status: str | Iterable[str] | None = None,
                   limit: int | None = DEFAULT_LIMIT, long: bool = False) -> ListResult:
    """`status`: one status or several (any of them). Raises UsageError for
    an unknown status or a negative limit."""
    statuses, limit = _check(status, limit)
    session = sessions.current()
    return _list(settings, session, _newest_first(all_sessions, session), all_sessions, statuses,
                 limit, long, lambda sid: observe(sid, stall_s=settings.stall_s,
                                                  kill_grace_s=settings.kill_grace_s))


def statuses_of(status: str | Iterable[str] | None) -> tuple[str, ...]:
    """The statuses asked for, each once, in the order given (none: every
    status). Raises UsageError for one that is no status."""
    asked = () if status is None else (status,) if isinstance(status, str) else tuple(status)
    for s in asked:
        if s not in STATUSES:
            raise UsageError(f"unknown {param('status')} '{s}'; choose one of: {', '.join(STATUSES)}")
    return tuple(dict.fromkeys(asked))


def _check(status: str | Iterable[str] | None, limit: int | None) -> tuple[tuple[str, ...], int]:
    """The statuses and the limit to use. Raises UsageError (StateError: the
    state folder is a file)."""
    statuses = statuses_of(status)
    limit = DEFAULT_LIMIT if limit is None else limit
    if limit < 0:
        raise UsageError(f"{param('limit')} must be 0 (all) or more, got {limit}")
    home = state_dir()
    if home.exists() and not home.is_dir():  # else "0 subagents" would hide the mistake
        raise StateError(f"the state folder {home} is a file, not a folder; point ZAPCLI_HOME "
                         "elsewhere or move the file")
    return statuses, limit


def _list(settings: Settings, session: str, ids: list[str], all_sessions: bool,
          status: tuple[str, ...], limit: int, long: bool, see: Callable[[str], View], *,
          kick: Callable[[], bool] | None = None,
          spawn: Callable[[str], SpawnRecord | None] | None = None) -> ListResult:
    """The list of `ids` (newest first), each seen through `see`; `kick`
    (once they are seen): whether to start what free slots allow (None:
    yes); `spawn`: a queued one's spawn record, known already (else read)."""
    views: list[View] = []
    damaged: dict[str, str] = {}
    more = 0
    for n, sid in enumerate(ids):
        if limit and len(views) >= limit and not status:
            more = len(ids) - n
            break
        try:
            view = see(sid)
        except Damaged as exc:  # named, not hidden: it has files, maybe a process
            if not status and not _being_spawned(sid):
                damaged[sid] = exc.message
            continue
        except NotFound:
            continue
        if not status or view.status in status:
            views.append(view)
    if limit and len(views) > limit:
        views, more = views[:limit], len(views) - limit
    if (kick is None or kick()) and _kick_queue(views, settings):  # it started some: show them as they are now
        views = [_again(v, see) for v in views]
    res = ListResult(session, views, all_sessions, more=more, limit=limit, long=long,
                     damaged=damaged, waiting=_waiting(views, settings, spawn), status=status)
    if not all_sessions and not views:
        res.in_other_sessions = in_other_sessions(session)
        res.active_elsewhere = active_elsewhere(session) if res.in_other_sessions else 0
        res.named = sessions.named()
    return res


class Watch:
    """`list --watch`: the list again and again, each subagent's trail
    re-read only when a feed (`zapcli.lifecycle.feed`) says its files
    changed, acting only where a look finds something to do (a death to
    record, a hook due: `zapcli.lifecycle.look`'s rule) — so a refresh over
    a thousand subagents where nothing happened reads no trail and writes
    nothing. The order is listed again only when an id comes or goes."""

    def __init__(self, settings: Settings, *, all_sessions: bool = False,
                 status: str | Iterable[str] | None = None, limit: int | None = DEFAULT_LIMIT):
        from zapcli.lifecycle.look import Looker

        self.settings, self.all_sessions = settings, all_sessions
        self.status, self.limit = _check(status, limit)
        self.session = sessions.current()
        self.looker = Looker(stall_s=settings.stall_s)
        self._order: list[str] | None = None
        self._kicked = 0.0

    def refresh(self, changed: set[str] | None = None) -> ListResult:
        """The list now; `changed`: the ids the feed named since the last
        refresh (None: check every trail by its size and time). The queue is
        kicked when a changed one has ended or is queued (a slot frees with
        an end; a new one waits for one), and KICK_S after the last time (a
        hold runs out on the clock)."""
        if self._order is None or (changed and not changed <= set(self._order)):
            self._order = _newest_first(self.all_sessions, self.session)
        gone: list[str] = []
        now = time.monotonic()
        kick = [changed is None or now - self._kicked >= KICK_S]

        def see(sid: str) -> View:
            moved = changed is None or sid in changed
            try:
                seen = self.looker.look(sid, changed=moved)
            except Damaged:
                raise
            except NotFound:
                gone.append(sid)
                raise
            view = seen.view if not seen.acts else \
                act(seen, stall_s=self.settings.stall_s, kill_grace_s=self.settings.kill_grace_s)
            if moved and (view.terminal or view.status == Status.QUEUED):
                kick[0] = True
            return view

        res = _list(self.settings, self.session, self._order, self.all_sessions, self.status,
                    self.limit, False, see, kick=lambda: kick[0], spawn=self.looker.spawn)
        if kick[0]:
            self._kicked = now
        if gone:
            self._order = None  # removed: list the order again next time
        return res


def _being_spawned(sid: str) -> bool:
    from zapcli.lifecycle import damaged as dmg

    found = dmg.inspect(sid)
    return found is not None and found.fresh


def _kick_queue(views: list[View], settings: Settings) -> bool:
    """Start what free slots allow; True when it started any."""
    started = False
    for s in {v.session for v in views if v.status == Status.QUEUED}:
        try:
            from zapcli.lifecycle import queue  # only then: most lists start nothing

            started = bool(queue.drain(s, settings)) or started
        except Exception:
            pass
    return started


def _again(view: View, see: Callable[[str], View]) -> View:
    if view.status != Status.QUEUED:
        return view
    try:
        return see(view.id)
    except NotFound:
        return view


def _waiting(views: list[View], settings: Settings,
             spawn: Callable[[str], SpawnRecord | None] | None = None) -> dict[str, str]:
    """What each queued one waits for (`lifecycle.waiting`)."""
    queued = [v for v in views if v.status == Status.QUEUED]
    if not queued:
        return {}
    from zapcli.lifecycle.waiting import waiting_for

    return {v.id: why for v in queued
            if (why := waiting_for(v, settings, spawn(v.id) if spawn else None))}


def in_other_sessions(session: str) -> int:
    """How many subagents other sessions have (their markers, counted, not
    read): when this session's list is empty, the caller may be in another
    session than it thinks (a harness without ZAPCLI_SESSION)."""
    mine = set(sessions.members(session))
    return sum(1 for _stamp, sid in sessions.all_members() if sid not in mine)


def active_elsewhere(session: str) -> int:
    """How many subagents other sessions have marked active (a hint from the
    markers, not a status), for `kill --all` finding nothing here."""
    mine = sessions.key(session)
    count = 0
    for k, sid in sessions.all_active():
        if k == mine:
            continue
        try:  # a marker is a hint: count only what really is not finished
            if not observe(sid).terminal:
                count += 1
        except NotFound:
            continue
    return count
