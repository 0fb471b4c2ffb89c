"""The acting observer: do what a look found left to do.

Imports `zapcli.lifecycle.look`, `zapcli.lifecycle.status`,
`zapcli.executors`, `zapcli.trail` (`zapcli.sandbox.placeholders` once one
is `lost`). `zapcli.lifecycle.look` says what a subagent is now and writes
nothing; `observe` looks and then `act`s on what the look found, and most
looks find nothing to do. Who must act and who must not is the rule in
`zapcli.lifecycle.look`'s docstring: commands that answer about a
subagent at one moment act; views that only show (top's refresh) do not.

Acting, as the spec requires: a dead runner with no terminal record gets a
sticky `lost` / `interrupted` status (and what is left of its work is
ended, the placeholders its sandbox held control files with included),
and one alive past its deadline by more than 10 s is killed and recorded
`timeout`. Both go through `store.end`, so the first terminal status wins
whoever else is ending it. An ended subagent's on-finish command that
nobody will start (never claimed, or claimed by a process that died before
its helper started) is claimed or taken over here, and so is every event
hook the look found due (`zapcli.trail.events`: the runner's own events it
did not fire, and `stalled`, which only an outsider sees).

A runner on another machine (a remote executor, docs/explanation/rules.md#remote-execution) is asked first
(its job's status), then what it wrote is brought home, then the status is
derived as for a local one; a cluster that does not answer leaves it
running until its deadline has passed, then it is `lost`. Once its job has
ended and everything that could come home has, a `collected` record says so:
from then on it is read from this machine's files alone, like a local one.
"""

from __future__ import annotations

import time

from zapcli.lifecycle.look import Look, activity_of, look_at
from zapcli.lifecycle.look import look as look  # the pure look, where callers found it first
from zapcli.lifecycle.status import (
    OBSERVER_DEADLINE_SLACK_S,
    Facts,
    Finding,
    View,
    apply,
    derive,
    to_view,
)
from zapcli.trail import reader, store
from zapcli.trail.model import FinalStatus, Outcome, Status
from zapcli.trail.reader import load

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

    from zapcli.executors.base import Executor, Signalled
    from zapcli.trail.model import RunnerRecord


def _activity_age(sid: str, s: reader.Summary) -> float | None:
    activity = activity_of(sid, s)
    return time.time() - activity if activity is not None else None


def _executor(s: reader.Summary) -> Executor:
    from zapcli import executors

    return executors.get(s.spawn.executor)


def facts_for(sid: str, s: reader.Summary, *, stall_s: float = 0.0) -> Facts:
    """The facts `derive` needs: asks the executor only for a runner that has
    started and not ended (a finished subagent costs no process check)."""
    now = time.monotonic()
    age = _activity_age(sid, s) if stall_s > 0 and s.final is None else None
    proc = s.runner
    if s.final is not None or proc is None:
        return Facts(None, now, activity_age=age)
    live = _executor(s).alive(proc.raw)
    boot = 0.0
    if live.alive is False:
        from zapcli.supervisor.liveness import boot_time

        boot = boot_time()
    return Facts(live.alive, now, boot, age, live.reason)


def view_of(sid: str, s: reader.Summary, *, stall_s: float = 0.0) -> View:
    """The view of a summary without asking any executor (a spawn's own answer)."""
    return to_view(sid, s, Facts(None, time.monotonic()), stall_s=stall_s)


def needs_collect(s: reader.Summary) -> bool:
    """True for a launched remote subagent whose files are not all home yet."""
    return s.spawn.executor != "local" and s.process is not None and s.collected is None


def observe(sid: str, *, stall_s: float = 0.0, kill_grace_s: float = 3.0,
            summary: reader.Summary | None = None) -> View:
    """Derive the current status of `sid` (docs/explanation/rules.md#status), acting where required:
    `act` on a fresh look (`summary`: its trail, read just before by the caller).
    Raises NotFound for an invalid or unknown id."""
    return act(look_at(sid, stall_s=stall_s, summary=summary), stall_s=stall_s,
               kill_grace_s=kill_grace_s)


def act(seen: Look, *, stall_s: float = 0.0, kill_grace_s: float = 3.0, progress: bool = True) -> View:
    """Do what a look found left to do (nothing, for most): bring a remote
    runner's files home, start an on-finish or event hook nobody started,
    record a death or an overdue runner's timeout. The view as it stands after.
    `progress=False`: a remote runner still running out there is not
    collected now (the queue asks only which ones ended: what a running one
    wrote comes home with the next look that shows it, or with its end)."""
    if not seen.acts:
        return seen.view
    sid, s = seen.id, seen.summary
    if seen.remote:
        view = _observe_remote(sid, s, stall_s=stall_s, kill_grace_s=kill_grace_s, progress=progress)
        _fire_hooks(look_at(sid, stall_s=stall_s))  # what came home may hold events nobody fired
        return view
    if seen.orphaned_finish:
        _finish_orphaned(sid, s)
    _fire_hooks(seen)
    if seen.finding is None:
        return seen.view
    if seen.finding.overdue:
        return _act(sid, s, seen.view, seen.finding, stall_s=stall_s, kill_grace_s=kill_grace_s)
    s = load(sid)  # closes the race with the runner's final flush
    view, finding = derive(sid, s, facts_for(sid, s, stall_s=stall_s), stall_s=stall_s)
    if finding is None:
        return view
    return _act(sid, s, view, finding, stall_s=stall_s, kill_grace_s=kill_grace_s)


def _fire_hooks(seen: Look) -> None:
    """Start the event hooks the look found due, and take over claims whose
    claimer died before starting them (`zapcli.trail.events`)."""
    if not (seen.due or seen.stale):
        return
    from zapcli.trail import events

    path = store.path_for(seen.id)
    if seen.due:
        events.fire(path, seen.due)
    for occ, token in seen.stale:
        events.fire(path, [occ], stale=token)


def _finish_orphaned(sid: str, s: reader.Summary) -> None:
    """An ended subagent's on-finish command that nobody will start: never
    claimed (whoever ended it died before claiming), or claimed by a process
    that died before its helper started (nothing says `running`
    `finish.TAKEOVER_S` after the claim) — that claim is taken over."""
    from zapcli.trail import finish

    claim = s.finish.get("claimed")
    if claim is None:
        finish.fire(store.path_for(sid))
        return
    token = claim.get("token")
    if not isinstance(token, str):  # a claim of before tokens: its helper cannot be told apart
        return
    from zapcli.supervisor.liveness import is_alive
    from zapcli.trail.records import parse_iso

    try:
        age = time.time() - parse_iso(str(claim.get("ts")))
    except ValueError:
        return
    if age >= finish.TAKEOVER_S and not is_alive(claim.get("pid"), claim.get("create_time")):
        finish.fire(store.path_for(sid), stale=token)


def _late(proc: RunnerRecord | None, now: float) -> bool:
    deadline = proc.deadline_mono if proc is not None else None
    return deadline is not None and now > deadline + OBSERVER_DEADLINE_SLACK_S


def _observe_remote(sid: str, s: reader.Summary, *, stall_s: float, kill_grace_s: float,
                    progress: bool = True) -> View:
    """Observe a runner on another machine (see the module docstring): its
    job's status FIRST, then collect (a job that has ended has shipped all it
    could; a running one's progress only with `progress`), then derive;
    `collected` once nothing more can come home."""
    ex = _executor(s)
    proc = s.process
    raw: dict[str, Any] = proc.raw if proc is not None else {}
    live = ex.alive(raw)
    fetch = live.alive is False or (live.alive is True and progress)
    got = ex.collect(sid, raw) if fetch else None
    if live.alive is False and got is None:  # it ended out there, but its files could not come home now
        from zapcli.executors.base import Liveness

        live = Liveness(None, f"{live.reason or 'its runner ended'}; its files could not be brought home yet")
    s = load(sid)
    now = time.monotonic()
    age = _activity_age(sid, s) if stall_s > 0 and s.final is None else None
    # boot time 0: a reboot of this machine says nothing about a node's runner
    view, finding = derive(sid, s, Facts(live.alive, now, 0.0, age, live.reason), stall_s=stall_s)
    late = _late(proc, now)
    if finding is None and s.final is None and live.alive is None and late:
        finding = Finding(Status.LOST, f"{live.reason}; nothing came back after its deadline passed "
                                       "(what came back before is kept)")
    if finding is not None:
        view = _act(sid, s, view, finding, stall_s=stall_s, kill_grace_s=kill_grace_s)
    elif view.status == Status.RUNNING and live.queued:  # handed over, not started out there yet
        view.status, view.reason, view.queued_out_there = Status.QUEUED, live.queued, live.queued
    elif not view.terminal and live.reason:  # what holds it up out there (unconfirmed, ...)
        view.reason = live.reason
    if live.alive is False or (live.alive is None and late):
        _mark_collected(sid, bool(got is not None and got.ended), live.reason)
    return view


def _mark_collected(sid: str, complete: bool, reason: str | None) -> None:
    path = store.path_for(sid)
    with store.locked(path):
        if load(sid).collected is None:
            store.append(path, "collected", {"complete": complete, "reason": reason})


def _act(sid: str, s: reader.Summary, view: View, finding: Finding, *, stall_s: float,
         kill_grace_s: float) -> View:
    """Record what was found, end what is left of the runner's work, free its slot.
    A runner that could not write its end (a full disk) kept it in its
    reserved slot: that outcome is recorded, not `lost`."""
    from zapcli.trail import ending, endslot  # only when something is to be recorded

    path = store.path_for(sid)
    found = finding.status
    kept = None if finding.overdue else endslot.kept(path)
    if kept is not None:
        finding = Finding(Status.parse(kept.get("status")) or finding.status,
                          str(kept.get("reason") or ""))
        extra = {k: v for k, v in kept.items() if k not in ("status", "exit_code", "reason", "dropped_records")
                 and (k != "ts" or isinstance(v, str))}  # the runner's own time of the end
        lost = _int(kept.get("dropped_records"))
        if lost:  # what else the full disk took, said before the end it kept
            store.append(path, "diagnostic", {"dimension": "trail", "name": "disk_full", "message":
                                              f"{lost} records were dropped: the disk was full"})
        final, _ours = ending.end(path, Outcome(finding.status, _int(kept.get("exit_code")),
                                                kept.get("reason")), **extra)
    else:
        when = _last_sign_of_life(sid, s) if found == Status.LOST else {}
        final, _ours = ending.end(path, Outcome(finding.status, None, finding.reason), by="observer",
                                  **when)
    if final is not None:
        endslot.release(path)
    if finding.overdue:
        stop_after_end(sid, s, final, kill_grace_s, collect=False)  # the caller collects
    elif found == Status.LOST:  # its work may outlive it (re-parented to init)
        stop_after_end(sid, s, final, min(kill_grace_s, 1.0), gone=True, collect=False)
        _sweep_placeholders()
    elif final is not None:
        forget_active(sid, s)
    if final is None:
        if kept is not None:
            view.exit_code = _int(kept.get("exit_code"))
        return apply(view, finding, recorded=False)
    fresh = load(sid)
    return to_view(sid, fresh, Facts(None, time.monotonic()), stall_s=stall_s)


def _sweep_placeholders() -> None:
    """A runner that died without its end (SIGKILL, OOM) left the empty
    folders its sandbox held control files with: removed now, not at the next
    sandbox or `gc` (only those no live sandbox holds)."""
    from zapcli.paths import placeholders_dir
    from zapcli.sandbox.placeholders import sweep

    try:
        sweep(str(placeholders_dir()))
    except OSError:
        pass


def stop_after_end(sid: str, s: reader.Summary, final: FinalStatus | None, grace_s: float, *,
                   gone: bool = False, collect: bool = True) -> Signalled:
    """Stop the runner of `sid` once its end is recorded (`final`, the terminal
    record; None when it could not be written: it is stopped all the same) —
    the one way an observer, `kill` and a run's token budget stop one.

    A remote runner is handed `final` first (unless it is known `gone`), so
    its node ends its tree itself within `grace_s`; then its tree is
    signalled. A remote one's files are then brought home (`collect`, unless
    the caller is the observer collecting them); a local one's helpers —
    in groups of their own, which a dead runner's group kill does not
    reach — are ended. Its session's active marker goes once `final` is
    recorded (a runner whose end could not be recorded stays to be observed)."""
    from zapcli.executors.base import Signalled

    proc = s.runner
    ex = _executor(s)
    report = Signalled()
    if proc is not None:
        if ex.remote and final is not None and not gone:
            deliver_quietly(ex, sid, proc.raw, final.raw)
        report = ex.signal(proc.raw, grace_s)
    if not ex.remote:
        end_helpers(sid, s, grace_s)
        _end_marked(sid, grace_s)
        _drop_scratch(sid)
    elif collect and proc is not None:
        observe(sid, kill_grace_s=grace_s)
    if final is not None:
        forget_active(sid, s)
    return report


def _drop_scratch(sid: str) -> None:
    """Its scratch folder, left empty by a runner stopped before it could
    remove it (its end recorded by another: the run's end, `kill`): gone
    with it. One that still holds files stays for `gc` (`rm`, retention)."""
    import os

    from zapcli.trail import store

    try:
        os.rmdir(store.path_for(sid, store.TMP))
    except OSError:
        pass


def _end_marked(sid: str, grace_s: float) -> None:
    """What its work left running detached (double-forked, setsid), found by
    the marker in its environment: a tree or group kill does not reach it."""
    from zapcli.supervisor.kill import end_marked

    end_marked(sid, grace_s)


def end_helpers(sid: str, s: reader.Summary, grace_s: float) -> int:
    """End the helpers a runner recorded (MCP servers and commands in groups
    of their own, which a dead runner's group kill does not reach) and note
    in the trail how many processes that took (C17). Local runners only."""
    if not s.helpers or s.spawn.executor != "local":
        return 0
    from zapcli.supervisor.kill import kill_helpers

    ended = kill_helpers(s.helpers, grace_s)
    if ended:
        store.append(store.path_for(sid), "diagnostic", {
            "dimension": "process", "name": "leftovers",
            "message": f"ended {ended} leftover process(es) its helpers left running"})
    return ended


def _last_sign_of_life(sid: str, s: reader.Summary) -> dict[str, Any]:
    """The `mono` of a dead runner's end: when its files last changed or it
    last said it was alive (`endslot.beat`, every few seconds), not when
    someone looked (its elapsed time would grow until then)."""
    from zapcli.trail import endslot

    age = _activity_age(sid, s)
    beat = endslot.last_beat(store.path_for(sid))
    if beat is not None:
        age = min(age, time.time() - beat) if age is not None else time.time() - beat
    if age is None:
        return {}
    runner = s.start or s.process
    began = runner.mono if runner is not None else None
    mono = time.monotonic() - age
    return {"mono": max(mono, began) if began is not None else mono}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def deliver_quietly(ex: Executor, sid: str, proc: dict[str, Any], record: dict[str, Any]) -> bool:
    """Hand a record to the runner; False when it could not be (the signal
    that follows still stops it)."""
    from zapcli.executors.base import ExecutorError

    try:
        ex.deliver(sid, proc, [record])
    except ExecutorError:
        return False
    return True


def forget_active(sid: str, s: reader.Summary) -> None:
    """A runner that died or was stopped by an observer cannot clear its
    session's active marker: do it for it."""
    from zapcli.lifecycle import session as sessions

    if s.spawn.session:
        sessions.deactivate(s.spawn.session, sid)
