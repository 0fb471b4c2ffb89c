"""`zapcli poll` and `zapcli wait`: observe named subagents until terminal.

Imports `zapcli.lifecycle`, `zapcli.lifecycle.queue`, `zapcli.ops.fold`. Each id
answers on its own: an unknown or malformed id is an entry with an error and
never affects the others. Explicit ids work from any session.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from zapcli.config import Settings
from zapcli.errors import (
    EXIT_OK,
    EXIT_WAIT_NOT_COMPLETED,
    EXIT_WAIT_TIMEOUT,
    Damaged,
    NotFound,
    UsageError,
    param,
)
from zapcli.lifecycle.observe import observe
from zapcli.lifecycle.status import View
from zapcli.ops.fold import Folded, fold_file, tail_text
from zapcli.plain import field, plain
from zapcli.trail import removals, store
from zapcli.trail.model import Status

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

TICK_S = 0.5  # the fallback: an end wakes a waiter at once (`lifecycle.wake`)
ENDS = (b'"type":"status"',)  # what wakes `wait`: an end (`lifecycle.wake`)
ENDS_OR_ASKS = ENDS + (b'"type":"approval_request"',)  # `poll` stops at a request too
BASE_WAIT_S = 5.0
STDERR_TAIL_BYTES = 1024


@plain
class Entry:
    id: str
    view: View | None = None
    error: str | None = None
    output: Folded | None = None
    stderr_tail: str | None = None  # the end of stderr, for one that did not complete
    tree: dict[str, Any] | None = None  # its worktree now: state, and whether HEAD moved
    structured: Any = None  # --output-schema: the parsed final report


@plain
class PollResult:
    entries: list[Entry] = field(default_factory=list)
    waited_s: float = 0.0

    @property
    def all_running(self) -> bool:
        return bool(self.entries) and all(
            e.view is not None and e.view.status in (Status.RUNNING, Status.QUEUED) for e in self.entries)


def _observe_all(ids: list[str], settings: Settings) -> list[Entry]:
    entries = []
    for sid in ids:
        try:
            entries.append(Entry(sid, observe(sid, stall_s=settings.stall_s,
                                              kill_grace_s=settings.kill_grace_s)))
        except NotFound as exc:
            entries.append(Entry(sid, error=f"{sid} does not exist" if isinstance(exc, Damaged)
                                 else exc.message))  # a run's id: said as what it is
    _kick_queue(entries, settings)
    return entries


def _kick_queue(entries: list[Entry], settings: Settings) -> None:
    """An observer that sees a queued subagent makes sure free slots are used."""
    for session in {e.view.session for e in entries if e.view and e.view.status == Status.QUEUED}:
        from zapcli.lifecycle import queue  # only then: most polls start nothing

        try:
            queue.drain(session, settings)
        except Exception:  # the queue is best effort for observers
            pass


def _done(entries: list[Entry], stop_on_approval: bool) -> bool:
    """Every one has ended — or one awaits an approval decision, which waiting
    longer would not bring (`stop_on_approval`: the caller is who decides)."""
    if stop_on_approval and any(e.view is not None and e.view.pending_approval for e in entries):
        return True
    return all(e.view is None or e.view.terminal for e in entries)


def poll(ids: list[str], settings: Settings, *, wait_secs: int | None = None, no_wait: bool = False,
         on_tick: Callable[[list[Entry], float], None] | None = None,
         stop_on_approval: bool = True) -> PollResult:
    """Wait up to 5 s + `wait_secs` (0..30; None = 0), woken by an end
    (`lifecycle.wake`) and checking every 500 ms besides, until every one
    has ended or one awaits an approval decision
    (unless `stop_on_approval` is False: someone else decides, e.g. the
    person at `zapcli run`'s terminal); fold outputs."""
    ids, budget = poll_plan(ids, wait_secs=wait_secs, no_wait=no_wait)
    start = time.monotonic()
    with _waker(ids, budget > 0, ENDS_OR_ASKS if stop_on_approval else ENDS) as waker:
        entries, done = poll_look(ids, settings, stop_on_approval)
        while not done and time.monotonic() - start < budget:
            if on_tick:
                on_tick(entries, time.monotonic() - start)
            waker.sleep(min(TICK_S, max(budget - (time.monotonic() - start), 0)))
            entries, done = poll_look(ids, settings, stop_on_approval)
    return poll_result(entries, time.monotonic() - start)


def poll_plan(ids: list[str], *, wait_secs: int | None = None,
              no_wait: bool = False) -> tuple[list[str], float]:
    """The ids a poll answers (resolved, each once) and how long it may wait.
    Raises UsageError. (`poll` and the asyncio API's poll share it.)"""
    if not ids:
        raise UsageError("poll needs at least one subagent id")
    if no_wait and wait_secs is not None:
        raise UsageError(f"{param('no_wait')} and {param('wait_secs')} contradict each other "
                         f"(check once, or wait up to 5 s plus {wait_secs}); choose one")
    ids = list(dict.fromkeys(store.resolve(i) for i in ids))  # the same id twice answers once
    if wait_secs is not None and not 0 <= wait_secs <= 30:
        raise UsageError(f"{param('wait_secs')} must be between 0 and 30, got {wait_secs}; "
                         f"poll waits at most 5 s plus that (use wait for longer, or "
                         f"{param('no_wait')} to check once)")
    return ids, 0.0 if no_wait else BASE_WAIT_S + (wait_secs or 0)


def poll_look(ids: list[str], settings: Settings,
              stop_on_approval: bool = True) -> tuple[list[Entry], bool]:
    """One look: the entries, and whether polling is over (every one ended,
    or one awaits a decision and `stop_on_approval`)."""
    entries = _observe_all(ids, settings)
    return entries, _done(entries, stop_on_approval)


def poll_result(entries: list[Entry], waited_s: float) -> PollResult:
    """The answer from the last look: outputs folded, ended ones settled."""
    for e in entries:
        if e.view is not None and e.view.status != Status.QUEUED:
            # a running one's output so far too: often enough to act on
            e.output = fold_file(store.path_for(e.id, ".out"), e.view.stdout_written)
        if e.view is not None and e.view.terminal:
            if e.view.status != Status.COMPLETED and e.view.stderr_written:
                # why it failed is usually here: show it without another command
                e.stderr_tail = tail_text(store.path_for(e.id, ".err"), STDERR_TAIL_BYTES)
            _settle(e.view)
            e.structured = _structured(e.view)
        if e.view is not None and e.view.worktree and e.view.worktree.get("ready"):
            e.tree = _tree_now(e.id, e.view.worktree)
    return PollResult(entries, waited_s)


class _Sleeper:
    """The interval alone: for a look that does not wait (`--no-wait`)."""

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def __enter__(self) -> _Sleeper:
        return self

    def __exit__(self, *_exc: object) -> None:
        pass


def _waker(ids: list[str], waits: bool, wake_on: tuple[bytes, ...]) -> Any:
    """What sleeps between looks: woken by an awaited subagent's end (set up
    before the first look, so an end right after it is not missed)."""
    if not waits:
        return _Sleeper()
    from zapcli.lifecycle.wake import Waker

    return Waker(ids, wake_on)


def _settle(view: View) -> None:
    """Settle a finished view's figures (and allotment) in the ledger
    (`ops.usage.settle`), imported only when there is something to settle:
    most subagents have no model calls and no tree."""
    if view.calls or view.input_tokens or view.output_tokens or view.parent:
        from zapcli.ops.usage import settle

        settle(view)


def _structured(view: View) -> Any:
    """The parsed final report of a completed subagent with an output schema."""
    if view.status != Status.COMPLETED:
        return None
    from zapcli.trail.reader import final_text, load, spawn_of

    try:  # its spawn line, not the whole trail again (observe has read it)
        spawn = spawn_of(store.path_for(view.id))
    except OSError:
        spawn = None
    if spawn is None:  # gone or damaged since: said as every command says it
        spawn = load(view.id).spawn
    if spawn.output_schema is None:
        return None
    from zapcli import outputschema

    return outputschema.structured(final_text(view.id, view.report))


def _tree_now(sid: str, receipt: dict[str, Any]) -> dict[str, Any] | None:
    """What the tree holds now, whether the checkout's branch moved since the
    base, and then whether the work still merges cleanly into it (a result
    built on an old base may need a merge or rebase)."""
    from zapcli.lifecycle import treework
    from zapcli.lifecycle.worktrees import squashed
    from zapcli.trail.reader import load
    from zapcli.worktrees import git as g
    from zapcli.worktrees.inspect import state
    from zapcli.worktrees.stale import note

    r = g.Receipt.from_dict(receipt)
    if r is None:
        return None

    def work() -> str | None:
        found = treework.safe_of(sid)
        return found.commit if found else None

    st = state(r)
    try:  # `merge --squash` took it: its commits are on the checkout's branch, squashed
        st.squashed = squashed(st, load(sid).merged)
    except NotFound:
        pass
    return {**st.to_dict(), **note(r, work)}


@plain
class WaitResult:
    views: list[View]
    timed_out: bool
    waited_s: float
    # ids whose files went meanwhile (counted by the end they had) -> when and by what
    removed: dict[str, str] = field(default_factory=dict)

    def structured(self, view: View) -> Any:
        """The parsed final report of one that completed with an output
        schema (None otherwise), as poll gives it."""
        if view.id in self.removed:
            return None
        return _structured(view)

    @property
    def exit_code(self) -> int:
        """0 every awaited one completed, 3 one ended otherwise, 4 the wait timed out."""
        if self.timed_out:
            return EXIT_WAIT_TIMEOUT
        if all(v.status == Status.COMPLETED for v in self.views if v.terminal):
            return EXIT_OK
        return EXIT_WAIT_NOT_COMPLETED


def outstanding(session: str | None = None) -> list[str]:
    """What `wait` with no ids waits for, on every surface: the subagents of
    this session that have not ended (queued, running, awaiting approval),
    oldest first — as a shell's `wait` waits for its unfinished jobs. Read
    from the session's active markers, which a subagent's end removes."""
    from zapcli.lifecycle import session as sessions

    # a marker without its trail is a spawn under way, or one removed since
    return [sid for sid in sessions.active(session or sessions.current())
            if store.path_for(sid).exists()]


def _look(sid: str, settings: Settings, seen: dict[str, View], gone: dict[str, View]) -> View:
    """`sid` now. One whose files went while (or before) the wait ran — `rm`,
    `clean` or `gc` in another terminal — is the end it had
    (`lifecycle.removed`), or, removed before it ended, said so as not
    completed; `gone` keeps it. Raises NotFound for an id never seen and
    never removed."""
    if sid in gone:
        return gone[sid]
    try:
        view = observe(sid, stall_s=settings.stall_s, kill_grace_s=settings.kill_grace_s)
    except Damaged:
        raise
    except NotFound:
        from zapcli.lifecycle import removed

        view = removed.end_of(sid)  # type: ignore[assignment]
        if view is None:
            if sid not in seen:
                raise
            view = removed.unfinished(seen[sid])
        gone[sid] = view
        return view
    seen[sid] = view
    return view


def wait(ids: list[str], settings: Settings, *, timeout_s: float | None = None, any_: bool = False,
         on_tick: Callable[[list[View], float], None] | None = None) -> WaitResult:
    """Block until all (or any) named subagents are terminal, or `timeout_s` passes.
    No ids (none `outstanding`): nothing to wait for, at once. One removed
    meanwhile (or before) counts by the end it had (`_look`).

    Raises NotFound naming the first id that does not exist and was never
    removed (nothing awaited).
    """
    ids = wait_plan(ids, timeout_s)
    if not ids:
        return WaitResult([], False, 0.0)
    start = time.monotonic()
    seen: dict[str, View] = {}
    gone: dict[str, View] = {}
    with _waker(ids, timeout_s != 0, ENDS) as waker:
        while True:
            views, over = wait_look(ids, settings, any_=any_, seen=seen, gone=gone)
            elapsed = time.monotonic() - start
            removed = removed_of(ids, gone)
            if over:
                return WaitResult(views, False, elapsed, removed)
            if timeout_s is not None and elapsed >= timeout_s:
                return WaitResult(views, True, elapsed, removed)
            if on_tick:
                on_tick(views, elapsed)
            waker.sleep(wait_interval(timeout_s, elapsed))


def removed_of(ids: list[str], gone: dict[str, View]) -> dict[str, str]:
    """The awaited ids whose files went, each with the words every command
    says of a removed one (`trail.removals`): when, and by what."""
    return {sid: removals.said(sid) or f"removed since, {removals.BY}" for sid in ids if sid in gone}


def wait_plan(ids: list[str], timeout_s: float | None) -> list[str]:
    """The ids a wait awaits (resolved, each once). Raises UsageError for a
    bad timeout. (`wait` and the asyncio API's wait share it.)"""
    if timeout_s is not None and not timeout_s >= 0:
        raise UsageError(f"{param('timeout')} must be 0 or more seconds (0: check once), got {timeout_s}")
    return list(dict.fromkeys(store.resolve(i) for i in ids))


def wait_look(ids: list[str], settings: Settings, *, any_: bool = False,
              seen: dict[str, View] | None = None,
              gone: dict[str, View] | None = None) -> tuple[list[View], bool]:
    """One look: the views, and whether the wait is over (all ended, or one
    with `any_`); the ended ones are settled when it is. `seen` and `gone`
    carry what earlier looks of the same wait saw, so one removed meanwhile
    counts by the end it had (`_look`). Raises NotFound."""
    seen = {} if seen is None else seen
    gone = {} if gone is None else gone
    views = [_look(sid, settings, seen, gone) for sid in ids]
    _kick_queue([Entry(v.id, v) for v in views], settings)
    finished = [v for v in views if v.terminal]
    if (any_ and finished) or len(finished) == len(views):
        for v in finished:
            if v.id not in gone:  # a removed one was settled before it went
                _settle(v)
        return views, True
    return views, False


def wait_interval(timeout_s: float | None, elapsed: float) -> float:
    """How long to sleep before the next look (an end wakes the sleeper sooner)."""
    return TICK_S if timeout_s is None else min(TICK_S, max(timeout_s - elapsed, 0.01))
