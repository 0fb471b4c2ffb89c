"""Results land back: a parent whose model answered while subagents it
started still work waits for the next result instead of ending, and each
result reaches its model in one short line before its next call.

Imports `zapcli.lifecycle` (observe, session, wake), `zapcli.trail`. What is
shared by the two parents that have a model: `zapcli run` (its `subagent`
tool keeps the ids it started and took over) and a built-in agent subagent
whose commands ran `zapcli spawn` (`Children` finds its own by the `parent`
their spawn records name). The parent's loop asks `await_results` when its
model answers without a tool call; only its own stop (a deadline, a budget,
the person) ends the wait early, and then what never reached the model is
its to list.
"""

from __future__ import annotations

import time

from zapcli.errors import NotFound
from zapcli.lifecycle.observe import observe
from zapcli.lifecycle.status import View

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

GATHER_S = 0.15  # after one result lands, others landing about then are awaited at least this long
GATHER_SHARE = 0.1  # and a tenth of how long it ran
GATHER_MAX_S = 2.0  # but never longer than this
LOOK_S = 0.5  # a look at every awaited subagent at least this often (a runner that died writes nothing)
STOP_S = 0.1  # how often the parent's own stop is asked while it waits
ENDS = (b'"type":"status"',)  # what wakes the wait: a status record in an awaited trail


class Children:
    """The subagents a built-in agent subagent `sid` started from its own
    commands (`zapcli spawn`: their spawn records name it as `parent`),
    found among its session's members made since it began, and what they
    left running when they ended (taken over, as the run does: C27). Each
    one's end is announced once; `await_results` is its loop's hook."""

    def __init__(self, sid: str, session: str):
        self.sid, self.session = sid, session
        self.since = time.time_ns()  # a child is made after its parent's runner began
        self.known: list[str] = []
        self.checked: set[str] = {sid}
        self.told: set[str] = set()

    def _find(self) -> None:
        from zapcli.lifecycle import session as sessions
        from zapcli.trail import reader, store

        for other in sessions.members_since(self.session, self.since):
            if other in self.checked:
                continue
            try:
                spawn = reader.spawn_of(store.path_for(other))
            except OSError:  # its marker comes before its trail: looked at again next time
                continue
            if spawn is None:
                continue
            self.checked.add(other)
            if spawn.raw.get("parent") == self.sid:
                self.known.append(other)

    def due(self) -> list[str]:
        """Its subagents whose end its model has not been told yet."""
        self._find()
        return [sid for sid in self.known if sid not in self.told]

    def announcements(self) -> list[str]:
        lines = []
        for sid in self.due():
            try:
                view = observe(sid)
            except NotFound:
                self.told.add(sid)
                lines.append(gone(sid))
                continue
            if view.terminal:
                self.told.add(sid)
                new = [p for p in view.pending if p not in self.known]
                self.known.extend(new)
                self.checked.update(new)
                lines.append(said(view, adopted(view.pending)))
        return lines

    def await_results(self, stopping: Callable[[], bool]) -> bool:
        return wait_for_next(self.due, stopping)


def adopted(pending: tuple[str, ...] | list[str]) -> str:
    """What a subagent left running, said where its end is announced: theirs come to you now."""
    if not pending:
        return ""
    return (f" (it ended with {len(pending)} subagent(s) of its own still running: "
            f"{', '.join(pending)}; their results come to you)")


def said(view: View, adopted: str = "") -> str:
    """The one line a parent's model reads about a subagent of its that ended."""
    first = summary(view)
    return f"[SubAgent] {view.id} finished: {view.status}" + (f" — {first}" if first else "") + adopted


def summary(view: View) -> str:
    """The first line of its report; without one (a shell command) its reason
    and the last line of its output."""
    first = _first(view.report)
    return first or "; output ends: ".join(x for x in (_first(view.reason), last_line(view.id)) if x)


def _first(text: str | None) -> str:
    return (text or "").strip().split("\n")[0][:200]


def last_line(sid: str, limit: int = 1024) -> str:
    """The last non-empty line of what `sid` wrote to stdout ("" when none), at most 200 characters."""
    import os

    from zapcli.trail import store

    try:
        fd = store.open_read(store.path_for(sid, ".out"))
    except (OSError, NotFound):
        return ""
    try:
        size = os.fstat(fd).st_size
        raw = os.pread(fd, min(size, limit), max(size - limit, 0))
    finally:
        os.close(fd)
    lines = [x for x in raw.decode("utf-8", "replace").splitlines() if x.strip()]
    return lines[-1].strip()[:200] if lines else ""


def gone(sid: str) -> str:
    """The line for a subagent removed (`rm`, `clean`, `gc`) before its result
    reached the parent: the end it had, from the note its removal left
    (`lifecycle.removed`), as `wait` counts it; its report and output went
    with its files."""
    from zapcli.lifecycle import removed

    end = removed.end_of(sid)
    if end is None:
        return f"[SubAgent] {sid} was removed before its result reached you; nothing of it is left to read"
    from zapcli.trail import removals

    why = _first(end.reason)
    said = removals.said(sid) or f"removed since, {removals.BY}"  # as every command says it
    return (f"[SubAgent] {sid} finished: {end.status}" + (f" — {why}" if why else "")
            + f" ({said}: its report and output are gone)")


def ended(sid: str) -> bool:
    """Whether `sid` has ended, or is gone (removed: nothing more will come)."""
    return _took(sid) is not None


def _took(sid: str) -> float | None:
    """How long `sid` ran, once it has ended (0 when gone or not known); None while it runs."""
    try:
        view = observe(sid)
    except NotFound:
        return 0.0
    return (view.elapsed_s or 0.0) if view.terminal else None


def gather_for(took: float) -> float:
    """How long to wait for others after a result that took `took` seconds:
    a tenth of that (subagents started together end close together, by a
    share of how long they run), at least GATHER_S, at most GATHER_MAX_S."""
    return min(max(took * GATHER_SHARE, GATHER_S), GATHER_MAX_S)


def wait_for_next(due: Callable[[], list[str]], stopping: Callable[[], bool]) -> bool:
    """Block until one of the ids `due()` names has ended, then a little more
    (`gather_for`) for others ending about then (one model call takes them
    all); False when `stopping()` said stop first, or nothing is due.
    `due()` is asked again at each look: a result may bring others (work a
    child left running, taken over)."""
    ids = due()
    if not ids:
        return False
    until: float | None = None  # the first result came: the end of the gathering
    waker, watched = _watch(ids)
    try:
        last, look = 0.0, True
        while not stopping():
            now = time.monotonic()
            if look or until is not None or now - last >= waker.nap(LOOK_S):
                last, ids = now, due()
                if not set(ids) <= watched:  # taken over since: watch those too
                    waker.close()
                    waker, watched = _watch(ids)
                took = [t for t in map(_took, ids) if t is not None]
                if len(took) == len(ids):
                    return True
                if took and until is None:
                    until = now + gather_for(max(took))
            if until is not None and now >= until:
                return True
            nap = STOP_S if until is None else min(STOP_S, max(until - now, 0.01))
            slept = time.monotonic()
            waker.sleep(nap)
            look = time.monotonic() - slept < nap * 0.9  # woken early: a trail gained a status
    finally:
        waker.close()
    return False


def _watch(ids: list[str]) -> tuple[Any, set[str]]:
    from zapcli.lifecycle.wake import Waker

    return Waker(ids, ENDS), set(ids)
