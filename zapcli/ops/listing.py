"""`zapcli list`: this session's subagents (or every session's), newest first.

Imports `zapcli.lifecycle`.
`--all` scans the subagents folder; a session's list reads only its members.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from zapcli import ids as idmod
from zapcli.config import Settings
from zapcli.errors import NotFound, StateError, UsageError, param
from zapcli.lifecycle import queue
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.observe import observe
from zapcli.lifecycle.status import View
from zapcli.paths import state_dir, subagents_dir
from zapcli.trail.model import ALL as STATUSES


def _all_ids() -> list[str]:
    try:
        names = os.listdir(subagents_dir())
    except FileNotFoundError:
        return []
    return [n[:-6] for n in names if n.endswith(".jsonl") and idmod.is_valid(n[:-6])]


@dataclass
class ListResult:
    """This session's (or every session's) views, newest first.
    `active_elsewhere`: when this session shows nothing, how many subagents
    other sessions have active (None when not counted)."""

    session: str
    views: list[View]
    all_sessions: bool = False
    active_elsewhere: int | None = None


def list_subagents(settings: Settings, *, all_sessions: bool = False,
                   status: str | None = None) -> ListResult:
    """Raises UsageError for an unknown status."""
    if status is not None and status not in STATUSES:
        raise UsageError(f"unknown {param('status')} '{status}'; choose one of: {', '.join(STATUSES)}")
    home = state_dir()
    if home.exists() and not home.is_dir():  # else "0 subagents" would hide the mistake
        raise StateError(f"the state folder {home} is a file, not a folder; point ZAPCLI_HOME "
                         "elsewhere or move the file")
    session = sessions.current()
    ids = _all_ids() if all_sessions else sessions.members(session)
    views: list[View] = []
    for sid in ids:
        try:
            views.append(observe(sid, stall_s=settings.stall_s, kill_grace_s=settings.kill_grace_s))
        except NotFound:
            continue
    if any(v.status == "queued" for v in views):
        for s in {v.session for v in views if v.status == "queued"}:
            try:
                queue.drain(s, settings)
            except Exception:
                pass
    views.sort(key=lambda v: v.created, reverse=True)
    if status:
        views = [v for v in views if v.status == status]
    res = ListResult(session, views, all_sessions)
    if not all_sessions and not views:
        res.active_elsewhere = active_elsewhere(session)
    return res


def active_elsewhere(session: str) -> int:
    """How many subagents other sessions have marked active (a hint from the
    markers, not a status): when this session's list is empty, the caller may
    be in another session than it thinks (a harness without ZAPCLI_SESSION)."""
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
