"""Status derivation (SPEC §6.2) and the `View` every command reports.

Imports `zapcli.trail`, `zapcli.supervisor`. Observing may act, as the spec
requires: a dead process with no terminal record gets a sticky `lost` /
`interrupted` status, and a process alive past its deadline by more than 10 s
is killed and recorded as `timeout`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from zapcli.errors import NotFound
from zapcli.redact import display
from zapcli.trail import reader, records, store
from zapcli.trail.model import Outcome, Status

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

OBSERVER_DEADLINE_SLACK_S = 10.0


@dataclass
class View:
    """One subagent as commands report it. Times are epoch seconds / seconds."""

    id: str
    status: str
    session: str
    cli: str
    agent: str | None
    task: str
    created: str
    reason: str | None = None
    exit_code: int | None = None
    elapsed_s: float | None = None
    stalled_s: float | None = None
    pid: int | None = None
    report: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    pending_approval: dict[str, Any] | None = None
    undelivered_messages: int = 0  # sent with `zapcli send`, but it ended before reading them
    stdout_written: int | None = None
    stderr_written: int | None = None
    after: tuple[str, ...] = ()
    ended: str | None = None

    @property
    def terminal(self) -> bool:
        return self.status in records.TERMINAL_STATUSES


def load(sid: str) -> reader.Summary:
    """Read and summarise a trail. Raises NotFound for a bad or unknown id."""
    path = store.path_for(sid)
    try:
        trail = reader.read(path)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(f"{sid} does not exist") from None
    except OSError:  # a symlink planted in place of a trail (ELOOP) is not a trail
        raise NotFound(f"{sid} does not exist") from None
    summary = reader.summarize(trail)
    if summary is None:
        raise NotFound(f"{sid} does not exist (its trail has no spawn record)")
    return summary


def _elapsed(s: reader.Summary, now_mono: float) -> float | None:
    proc = s.process or s.start
    if proc is None:
        return None
    start_mono = proc.get("mono")
    if s.final is not None:
        end_mono = s.final.get("mono")
        if isinstance(start_mono, (int, float)) and isinstance(end_mono, (int, float)) and end_mono >= start_mono:
            return end_mono - start_mono
        try:
            return max(records.parse_iso(s.final["ts"]) - records.parse_iso(proc["ts"]), 0.0)
        except (KeyError, ValueError, TypeError):
            return None
    if isinstance(start_mono, (int, float)) and now_mono >= start_mono:
        return now_mono - start_mono
    return None


def _activity_age(sid: str) -> float | None:
    newest = 0.0
    for suffix in (".jsonl", ".out", ".err"):
        try:
            newest = max(newest, os.stat(store.path_for(sid, suffix), follow_symlinks=False).st_mtime)
        except OSError:
            continue
    return time.time() - newest if newest else None


def to_view(sid: str, s: reader.Summary, *, stall_s: float = 0.0) -> View:
    """Build the View from a summary without touching any process."""
    sp = s.spawn
    view = View(
        id=sid, status="queued", session=str(sp.get("session", "")), cli=str(sp.get("cli", "")),
        agent=sp.get("agent"), task=display(str(sp.get("task", ""))), created=str(sp.get("ts", "")),
        report=s.report, input_tokens=s.input_tokens, output_tokens=s.output_tokens,
        cached_tokens=s.cached_tokens, after=tuple(sp.get("after") or ()),
    )
    if s.process is not None or s.start is not None:
        view.pid = (s.process or s.start or {}).get("pid")
        view.status = "running"
    if s.final is not None:
        f = s.final
        view.status = f["status"]
        view.reason = f.get("reason")
        view.exit_code = f.get("exit_code")
        view.stdout_written = f.get("stdout_bytes")
        view.stderr_written = f.get("stderr_bytes")
        view.ended = f.get("ts")
        view.undelivered_messages = max(s.messages_sent - s.messages_delivered, 0)
    elif s.pending_approval is not None:
        view.status = "awaiting_approval"
        view.pending_approval = {k: v for k, v in s.pending_approval.items()
                                 if k not in ("v", "seq", "type")}  # the request, not the record
    view.elapsed_s = _elapsed(s, time.monotonic())
    if view.status in ("running", "awaiting_approval") and stall_s > 0:
        age = _activity_age(sid)
        if age is not None and age >= stall_s:
            view.stalled_s = age
    return view


NOT_RECORDED = " (not recorded: the state folder is full or read-only)"


def _append_status(sid: str, s: reader.Summary, status: str, reason: str) -> bool:
    """Record what an observer found. False when it could not be written: the
    caller then shows the finding anyway (a dead runner must not read
    `running` forever because the disk is full)."""
    final, _ours = store.end(store.path_for(sid), Outcome(Status(status), None, reason),
                             by="observer")
    return final is not None


def _unrecorded(sid: str, s: reader.Summary, status: str, reason: str, stall_s: float) -> View:
    view = to_view(sid, s, stall_s=stall_s)
    view.status, view.reason, view.stalled_s = status, reason + NOT_RECORDED, None
    return view


def observe(sid: str, *, stall_s: float = 0.0, kill_grace_s: float = 3.0) -> View:
    """Derive the current status of `sid` (SPEC §6.2), acting where required.

    Raises NotFound for an invalid or unknown id.
    """
    s = load(sid)
    proc = s.process or s.start  # `start` is the child's own word if the spawner died early
    if s.final is not None or proc is None:
        return to_view(sid, s, stall_s=stall_s)
    from zapcli.supervisor import liveness

    pid, ctime = proc.get("pid"), proc.get("create_time")
    if isinstance(pid, int) and isinstance(ctime, (int, float)) and liveness.is_alive(pid, ctime):
        deadline = proc.get("deadline_mono")
        if isinstance(deadline, (int, float)) and time.monotonic() > deadline + OBSERVER_DEADLINE_SLACK_S:
            reason = "deadline passed; killed by an observer"
            recorded = _append_status(sid, s, "timeout", reason)
            from zapcli.supervisor.kill import kill_tree

            kill_tree(int(pid), float(ctime), kill_grace_s)  # type: ignore[arg-type]
            if not recorded and load(sid).final is None:
                return _unrecorded(sid, s, "timeout", reason, stall_s)
            _forget_active(sid, s)
            return to_view(sid, load(sid), stall_s=stall_s)
        return to_view(sid, s, stall_s=stall_s)
    s = load(sid)  # closes the race with the child's final flush
    if s.final is None:
        spawned = records.parse_iso(str(s.spawn.get("ts"))) if s.spawn.get("ts") else 0.0
        if liveness.boot_time() > spawned:
            status, reason = "interrupted", "the machine restarted while it ran"
            recorded = _append_status(sid, s, status, reason)
        else:
            status, reason = "lost", "its process died without recording a result"
            recorded = _append_status(sid, s, status, reason)
            # Its work may outlive it (re-parented to init): end it, or it runs on uncounted.
            from zapcli.supervisor.kill import kill_orphans

            if isinstance(pid, int) and isinstance(ctime, (int, float)):
                kill_orphans(pid, float(ctime), min(kill_grace_s, 1.0))
        if not recorded and load(sid).final is None:
            return _unrecorded(sid, s, status, reason, stall_s)
        _forget_active(sid, s)
        s = load(sid)
    return to_view(sid, s, stall_s=stall_s)


def _forget_active(sid: str, s: reader.Summary) -> None:
    """A runner that died or was stopped by an observer cannot clear its
    session's active marker: do it for it."""
    from zapcli.ops import session as sessions

    session = s.spawn.get("session")
    if isinstance(session, str):
        sessions.deactivate(session, sid)
