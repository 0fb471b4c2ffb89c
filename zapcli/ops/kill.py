"""`zapcli kill`: cancel subagents — record first, then signal the whole tree.

Imports `zapcli.lifecycle` (observe — which stops a runner —, queue, session).
The `cancelled` status is appended (fsynced) before any signal, so it is the
first terminal record whatever the dying child writes. Pending approvals are
settled as denied. Several ids are killed in parallel so grace periods overlap.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from zapcli.config import MAX_KILL_GRACE_S, Settings
from zapcli.errors import Damaged, NotFound, UsageError, param
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.observe import observe, stop_after_end
from zapcli.results import KillEntry
from zapcli.trail import ending, store
from zapcli.trail.model import FinalStatus, Outcome, RunnerRecord, Status
from zapcli.trail.reader import load

NOT_RECORDED = ("killed, but the cancel could not be recorded (the state folder is full or "
                "read-only): its status will show how it ended instead")


def _record_cancel(sid: str, grace_s: float | None = None
                   ) -> tuple[RunnerRecord | None, FinalStatus | None, str | None]:
    """Append the denied approvals and the `cancelled` status; return the
    process record to signal (None when it never started), the final status
    record (None when it could not be written), and — when it had already
    ended — how.

    Decided under the trail's lock, the one the runner ends under: a child
    that finished first wins, and the kill reports that instead of a cancel."""
    path = store.path_for(sid)
    with store.locked(path):  # a racing approve or end cannot land in between
        s = load(sid)
        if s.final is not None:
            return None, None, str(s.final.status)
        final, ours = ending.end(path, Outcome(Status.CANCELLED, None, "killed by the user"),
                                 by="kill", grace_s=grace_s, deny_pending="the subagent was killed")
    if final is not None and not ours:
        return None, None, str(final.status)
    return s.runner, final, None


def _kill_damaged(sid: str, grace_s: float, why: str) -> KillEntry:
    """A trail without its spawn record: its cancel cannot be recorded, but
    a runner its `process` record names (identity-checked) is stopped."""
    from zapcli.executors import get
    from zapcli.lifecycle import damaged

    found = damaged.inspect(sid)
    if found is None or not found.alive or found.process is None:
        sessions.forget_everywhere(sid, ("active",))  # `kill --all` asks no more
        return KillEntry(sid, "not cancelled", error=f"{why}; nothing of it runs")
    report = get("local").signal(found.process.raw, grace_s)
    sessions.forget_everywhere(sid, ("active",))
    return KillEntry(sid, "killed", pid=found.process.pid,
                     signals=(report.how or ("SIGTERM, SIGKILL" if report.killed else "SIGTERM"))
                     if report.root_alive else None,
                     error=f"{sid} is damaged ({found.reason}): its process was stopped, its "
                           f"cancel could not be recorded; zapcli rm {sid} removes its files")


def _kill_one(sid: str, grace_s: float, settings: Settings) -> KillEntry:
    try:
        view = observe(sid, kill_grace_s=settings.kill_grace_s)
    except Damaged as exc:
        return _kill_damaged(sid, grace_s, exc.message)
    except NotFound as exc:
        return KillEntry(sid, "does not exist", error=exc.message)
    if view.terminal:
        return KillEntry(sid, f"already {view.status}")
    if view.status == Status.QUEUED:
        # Under the queue lock, so a slot freeing right now cannot start it behind our back.
        from zapcli.lifecycle.queue import session_lock

        with session_lock(view.session):
            s = load(sid)
            if s.queued:
                _, final, ended = _record_cancel(sid)
                if ended is not None:
                    return KillEntry(sid, f"already {ended}")
                if final is None:  # nothing runs yet, and it must not start
                    return KillEntry(sid, "not cancelled", error=(
                        f"{sid}: the cancel could not be recorded (the state folder is full or "
                        "read-only); it stays queued"))
                sessions.deactivate(view.session, sid)  # its kept keys went with its end
                return KillEntry(sid, "cancelled", session=view.session)
        view = observe(sid, kill_grace_s=settings.kill_grace_s)
        if view.terminal:
            return KillEntry(sid, f"already {view.status}")
    proc, final, ended = _record_cancel(sid, grace_s)
    if ended is not None:  # it finished on its own while we looked: say so, signal nothing
        return KillEntry(sid, f"already {ended}")
    recorded = final is not None
    if proc is None:
        sessions.deactivate(view.session, sid)
        return KillEntry(sid, "cancelled", session=view.session)
    report = stop_after_end(sid, load(sid), final, grace_s)
    if not recorded:  # stopped all the same: its slot is free
        sessions.deactivate(view.session, sid)
    sig = report.how or ("SIGTERM, SIGKILL" if report.killed else "SIGTERM")
    # Stopping it matters more than recording it: it is stopped either way.
    return KillEntry(sid, "cancelled" if recorded else "killed", pid=proc.pid,
                     signals=sig if report.root_alive else None, session=view.session,
                     error=None if recorded else f"{sid}: {NOT_RECORDED}")


def _kill_any(sid: str, grace_s: float, settings: Settings, runs: bool) -> KillEntry:
    from zapcli.trail import runs as run_trails

    if runs and run_trails.is_run_id(sid):
        from zapcli.ops.killrun import kill_run

        return kill_run(sid, grace_s, settings.kill_grace_s)
    return _kill_one(sid, grace_s, settings)


def kill(ids: list[str], settings: Settings, *, grace_s: float | None = None,
         all_: bool = False, runs: bool = False) -> list[KillEntry]:
    """Kill the named subagents (or, with `all_`, every running and queued one
    of this session). Each id answers on its own. `runs`: a `zapcli run`'s id
    stops that run, its subagents with it (`zapcli kill` and the Python API,
    what a person types; a model's tool surfaces say what a run id is)."""
    if all_ and ids:
        raise UsageError(f"give subagent ids or {param('all')}, not both")
    if not all_ and not ids:
        raise UsageError(f"kill needs subagent ids (or {param('all')} for this session's running ones)")
    grace = settings.kill_grace_s if grace_s is None else grace_s
    if not grace >= 0 or grace > MAX_KILL_GRACE_S:
        raise UsageError(f"{param('grace')} must be between 0 and {MAX_KILL_GRACE_S} seconds, "
                         f"got {grace_s}")
    if all_:
        session = sessions.current()
        ids = [sid for sid in sessions.active(session)]
    ids = list(dict.fromkeys(store.resolve(i) for i in ids))  # the same id twice: once
    if not ids:
        return []
    with ThreadPoolExecutor(max_workers=min(len(ids), 16)) as pool:
        entries = list(pool.map(lambda sid: _kill_any(sid, grace, settings, runs), ids))
    _start_queued(entries, settings)
    if all_:
        entries = [e for e in entries if e.stopped or e.outcome == "not cancelled"]
    return entries


def _start_queued(entries: list[KillEntry], settings: Settings) -> None:
    """Killing freed slots. The killed supervisor drains its queue as it exits,
    unless it needed SIGKILL: then nobody would until the next observer, so the
    killer does it (docs/explanation/rules.md#queue: whoever observes a free slot)."""
    from zapcli.lifecycle import queue

    for session in {e.session for e in entries if e.session and e.stopped}:
        try:
            queue.drain(session, settings)
        except Exception:  # noqa: BLE001 - best effort; the next observer drains too
            pass


def end_and_stop(sid: str, outcome: Outcome, settings: Settings, *, by: str,
                 answered: Outcome | None = None, unasked: str | None = None) -> bool:
    """Record `outcome` as the end of `sid` (the first terminal status wins),
    then end its process tree as `kill` does — for a stop that is not the
    user's cancel (a run's token budget, the run's end); a pending approval
request is settled as denied with the same reason. `answered`: the end
    instead when its final answer (`report`) had already arrived, decided
    under the trail's lock. `unasked`: the reason a pending request is
    denied, when the end's own (said of a result) does not fit a question.
    True when this call ended it."""
    path = store.path_for(sid)
    if load(sid).final is not None:  # NotFound for a trail that is gone
        return False
    with store.locked(path):
        s = load(sid)
        if s.final is not None:
            return False
        if answered is not None and s.report is not None:
            outcome = answered
        # nobody will answer its pending request once it has ended: denied, saying why
        final, ours = ending.end(path, outcome, by=by,
                                 deny_pending=unasked or outcome.reason or f"stopped by {by}")
    if not ours:
        return False
    stop_after_end(sid, load(sid), final, settings.kill_grace_s)  # its start may have landed since
    return True


def stop_all(ids: list[str], outcome: Outcome, settings: Settings, *,
             answered: Outcome | None = None, unasked: str | None = None) -> list[str]:
    """`end_and_stop` for each of `ids` at once (their grace periods overlap);
    the ids this call ended."""
    def one(sid: str) -> bool:
        try:
            return end_and_stop(sid, outcome, settings, by="run", answered=answered,
                                unasked=unasked)
        except NotFound:
            return False

    if not ids:
        return []
    with ThreadPoolExecutor(max_workers=min(len(ids), 16)) as pool:
        return [sid for sid, ended in zip(ids, pool.map(one, ids), strict=True) if ended]
